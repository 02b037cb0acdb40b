-- The customers service's database in split mode: its inbox and each
-- customer's history, as 0004_bakery.sql made them in the shared database.

select platform.create_inbox('customers');

create table customers.history (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  message_id uuid not null unique,
  email text not null,
  name text not null,
  order_id uuid not null,
  event text not null,
  total_cents int not null,
  at timestamptz not null default now()
);
create index history_by_email on customers.history (tenant_id, email);
select platform.enable_tenant_rls('customers.history');
