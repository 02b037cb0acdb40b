-- The billing service's database in split mode: what 0004_bakery.sql,
-- 0010_checkout_events.sql and their later changes made in the billing
-- schema of the shared database, where each table is explained.

select platform.create_outbox_with_indexes('billing');

create table billing.payments (
  id text primary key,
  tenant_id uuid not null,
  order_id uuid not null,
  amount_cents int not null check (amount_cents >= 0),
  state text not null default 'pending'
    check (state in ('pending', 'succeeded', 'failed', 'refund_due')),
  card_last4 text,
  failure_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  currency text not null default 'eur',
  charged_cents int,
  charged_currency text,
  refund_reason text,
  checkout_url text
);
create index payments_by_order on billing.payments (order_id);
create index payments_refund_due on billing.payments (tenant_id, updated_at)
  where state = 'refund_due';

create table billing.stripe_events (
  event_id text primary key,
  tenant_id uuid,
  type text not null,
  payment_id text,
  order_id uuid,
  outcome text not null,
  received_at timestamptz not null default now(),
  status smallint not null default 200 check (status in (200, 422))
);

create table billing.checkout_events (
  event_id text primary key,
  tenant_id uuid not null,
  payment_id text not null,
  payload text not null,
  state text not null default 'pending'
    check (state in ('pending', 'delivered', 'gave_up')),
  attempts int not null default 0,
  next_attempt_at timestamptz not null default now(),
  lease_token uuid,
  last_status smallint,
  last_error text,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  resent_by text,
  resent_at timestamptz,
  traceparent text
);
create index checkout_events_by_payment on billing.checkout_events (payment_id);
create index checkout_events_due on billing.checkout_events (next_attempt_at)
  where state = 'pending';

select platform.enable_tenant_rls(t::regclass) from unnest(array[
  'billing.payments', 'billing.stripe_events', 'billing.checkout_events'
]) as t;
