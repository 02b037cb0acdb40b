-- Dispatch's database in split mode: its inbox and its delivery stops, as
-- 0004_bakery.sql made them in the shared database.

select platform.create_inbox('dispatch');

create table dispatch.stops (
  order_id uuid primary key,
  tenant_id uuid not null,
  state text not null check (state in ('confirmed', 'cancelled')),
  version int not null,
  customer_name text,
  day date,
  updated_at timestamptz not null default now()
);
select platform.enable_tenant_rls('dispatch.stops');
