-- The bakery's own state, one schema per service (made in 0001_platform.sql).
-- Every table carries sandbox_id and the sandbox policy
-- (platform.enable_sandbox_rls). Orders and billing send (an outbox each);
-- orders and the six receivers receive (an inbox each).

select platform.create_outbox_with_indexes('orders');
select platform.create_outbox_with_indexes('billing');
select platform.create_inbox(s) from unnest(array['orders', 'kitchen',
  'schedule', 'dispatch', 'crm', 'customers', 'receipts']) as s;

-- orders -------------------------------------------------------------------

-- Order states (services/orders/states.ts mirrors this CHECK):
--   placed         : ordered, not paid. Moved out by the orders service when
--                    PaymentSucceeded (paid), PaymentFailed (payment_failed)
--                    arrives, or when the visitor cancels (cancelled).
--   payment_failed : the card was declined; can still be paid or cancelled,
--                    moved out the same way as placed.
--   paid           : final for the visitor (no cancel once paid).
--   cancelled      : final.
--
-- No index by sandbox: orders are read by id (the order page, payments,
-- cancels, the timeline), and the daily wipe deletes a sandbox's orders
-- together with most of the table. One would cost an entry for every order
-- placed (about 120 bytes of WAL per order) for no query.
create table orders.orders (
  id uuid primary key,
  sandbox_id uuid not null,
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
  updated_at timestamptz not null default now()
);

create table orders.lines (
  order_id uuid not null references orders.orders (id),
  sku text not null,
  sandbox_id uuid not null,
  name text not null,
  qty int not null check (qty between 1 and 50),
  unit_cents int not null check (unit_cents >= 0),
  primary key (order_id, sku)
);

-- What each sandbox has promised per day and product, to refuse an order
-- over the day's capacity before payment, atomically.
create table orders.day_counts (
  sandbox_id uuid not null,
  day date not null,
  sku text not null,
  qty int not null check (qty >= 0),
  primary key (sandbox_id, day, sku)
);

-- The order's history: every state change, with the version it made. The
-- order page finds the order's own messages through it (message_id), not
-- through a scan of the outbox.
create table orders.events (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  order_id uuid not null references orders.orders (id),
  type text not null,
  version int not null,
  message_id uuid,
  payload jsonb not null default '{}',
  at timestamptz not null default now()
);
create index events_by_order on orders.events (order_id, id);
-- The payments the orders service keeps for a refund (a second payment of
-- a paid order, a payment of a cancelled one), for the console's list of
-- payments needing a refund. They are few.
create index events_needing_refund on orders.events (sandbox_id, at)
  where payload->>'action' = 'refund';

-- Idempotency keys of commands: the same key returns the same order; the
-- same key with another body is refused.
create table orders.commands_seen (
  sandbox_id uuid not null,
  idempotency_key text not null,
  request_hash text not null,
  order_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (sandbox_id, idempotency_key)
);

-- billing ------------------------------------------------------------------

-- The order page finds billing's messages about an order (one or two per
-- payment) through this index of the order they are about, not through a
-- scan of every outbox row (a scan that grows with history).
create index outbox_by_aggregate on billing.outbox ((envelope->>'aggregateId'));

-- Payments that add up. The pay request opens the payment with the amount
-- and the currency the order needs, and the checkout that a repeated pay
-- request returns; the webhook records what Stripe says it charged and
-- compares it with both, and keeps a charge that is not the order's as a
-- payment that needs a refund instead of telling the orders service it was
-- paid.
--
-- Payment states (services/billing/open_payment.ts mirrors this CHECK):
-- pending (opened by a pay request; moved out by a Stripe event), succeeded
-- (final), failed (final for this payment; the order may be paid again),
-- refund_due (money was taken but the charge is not the order's: another
-- amount or currency, or a payment billing never opened; final here, shown
-- to the operator, who refunds it in Stripe).
create table billing.payments (
  id text primary key,
  sandbox_id uuid not null,
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
-- billing's part of the console's list of payments needing a refund. Few.
create index payments_refund_due on billing.payments (sandbox_id, updated_at)
  where state = 'refund_due';

-- Every Stripe event id, once: a replay changes nothing and gets the answer
-- the first one got.
create table billing.stripe_events (
  event_id text primary key,
  -- null when the event names no sandbox of ours (written in the workers
  -- scope, visible to operators through the logs and this table)
  sandbox_id uuid,
  type text not null,
  payment_id text,
  order_id uuid,
  -- what billing did with it, in words (shown to the operator)
  outcome text not null,
  received_at timestamptz not null default now(),
  -- 200, or 422 when billing refused it (a payment id of another sandbox)
  status smallint not null default 200 check (status in (200, 422))
);

-- kitchen ------------------------------------------------------------------

-- Card states: new (OrderPlaced), confirmed (OrderPaid), cancelled
-- (OrderCancelled). A card that an early OrderCancelled created before its
-- OrderPlaced arrived has placed_message_id null.
create table kitchen.cards (
  order_id uuid primary key,
  sandbox_id uuid not null,
  state text not null check (state in ('new', 'confirmed', 'cancelled')),
  version int not null,
  items jsonb not null default '[]',
  day date,
  placed_message_id uuid,
  updated_at timestamptz not null default now()
);
create index cards_by_sandbox on kitchen.cards (sandbox_id, updated_at desc);

-- schedule -----------------------------------------------------------------

-- Per order and product: held on OrderPlaced, reserved on OrderPaid,
-- released on OrderCancelled.
create table schedule.bookings (
  order_id uuid not null,
  sku text not null,
  sandbox_id uuid not null,
  day date not null,
  qty int not null,
  state text not null check (state in ('held', 'reserved', 'released')),
  version int not null,
  primary key (order_id, sku)
);
create index bookings_by_day on schedule.bookings (sandbox_id, day, sku);

-- dispatch -----------------------------------------------------------------

create table dispatch.stops (
  order_id uuid primary key,
  sandbox_id uuid not null,
  state text not null check (state in ('confirmed', 'cancelled')),
  version int not null,
  customer_name text,
  day date,
  updated_at timestamptz not null default now()
);

-- crm ----------------------------------------------------------------------

create table crm.interactions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null unique,
  email text not null,
  order_id uuid not null,
  kind text not null,
  note text not null,
  at timestamptz not null default now()
);

-- customers ----------------------------------------------------------------

create table customers.history (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null unique,
  email text not null,
  name text not null,
  order_id uuid not null,
  event text not null,
  total_cents int not null,
  at timestamptz not null default now()
);
create index history_by_email on customers.history (sandbox_id, email);

-- receipts -----------------------------------------------------------------

create table receipts.receipts (
  order_id uuid primary key,
  sandbox_id uuid not null,
  number text not null,
  lines jsonb not null,
  total_cents int not null,
  payment_ref text not null,
  message_id uuid not null,
  issued_at timestamptz not null default now()
);

select platform.enable_sandbox_rls(t::regclass) from unnest(array[
  'orders.orders', 'orders.lines', 'orders.day_counts', 'orders.events',
  'orders.commands_seen', 'billing.payments', 'billing.stripe_events',
  'kitchen.cards', 'schedule.bookings', 'dispatch.stops', 'crm.interactions',
  'customers.history', 'receipts.receipts'
]) as t;
