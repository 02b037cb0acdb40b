-- The orders service's database in split mode: what 0004_bakery.sql and its
-- later changes made in the orders schema of the shared database. Order
-- states are explained there; tests/split_schema_test.ts checks that both
-- ways give the same schema.

select platform.create_outbox_with_indexes('orders');
select platform.create_inbox('orders');

create table orders.orders (
  id uuid primary key,
  tenant_id uuid not null,
  state text not null default 'placed'
    check (state in ('placed', 'payment_failed', 'paid', 'cancelled')),
  version int not null default 1,
  customer_name text not null,
  customer_email text not null,
  fulfilment text not null check (fulfilment in ('pickup', 'delivery')),
  day date not null,
  total_cents int not null check (total_cents >= 0),
  payment_ref text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  number text generated always as (upper(right(id::text, 6))) stored,
  email_key text generated always as (lower(customer_email)) stored
);
create index orders_by_email
  on orders.orders (tenant_id, email_key text_pattern_ops);
create index orders_by_number on orders.orders (number);

create table orders.lines (
  order_id uuid not null references orders.orders (id),
  sku text not null,
  tenant_id uuid not null,
  name text not null,
  qty int not null check (qty between 1 and 50),
  unit_cents int not null check (unit_cents >= 0),
  primary key (order_id, sku)
);

create table orders.day_counts (
  tenant_id uuid not null,
  day date not null,
  sku text not null,
  qty int not null check (qty >= 0),
  primary key (tenant_id, day, sku)
);

create table orders.events (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  order_id uuid not null references orders.orders (id),
  type text not null,
  version int not null,
  message_id uuid,
  payload jsonb not null default '{}',
  at timestamptz not null default now()
);
create index events_by_order on orders.events (order_id, id);
create index events_needing_refund on orders.events (tenant_id, at)
  where payload->>'action' = 'refund';

create table orders.commands_seen (
  tenant_id uuid not null,
  idempotency_key text not null,
  request_hash text not null,
  order_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, idempotency_key)
);

select platform.enable_tenant_rls(t::regclass) from unnest(array[
  'orders.orders', 'orders.lines', 'orders.day_counts', 'orders.events',
  'orders.commands_seen'
]) as t;
