-- The ledger lab's sender in split mode: its outbox and its orders, as
-- 0007_labs.sql made them in the shared database, where the lab is
-- explained. Its database has a queue of its own too.

select platform.create_outbox_with_indexes('lab_sender');

create table lab_sender.orders (
  tenant_id uuid not null,
  order_id text not null check (order_id ~ '^O[0-9]{1,6}$'),
  state text not null default 'placed' check (state in ('placed', 'cancelled')),
  version int not null default 1,
  created_at timestamptz not null default now(),
  primary key (tenant_id, order_id)
);
select platform.enable_tenant_rls('lab_sender.orders');
