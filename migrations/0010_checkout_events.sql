-- The test checkout's outbox. Without Stripe keys the bakery plays Stripe:
-- a pay request settles by a Stripe-signed event posted to /webhooks/stripe.
-- The event is written here in the transaction that opens the payment, and
-- posted until the webhook answers 2xx, across restarts, as Stripe keeps and
-- retries its own events. Held only in memory, a crash between the pay
-- request's answer and the webhook's commit lost the payment for good.
--
-- States (services/billing/checkout_events.ts mirrors this CHECK):
-- pending (written with the payment; the sender claims it when it is due,
-- and moves it out), delivered (final: the webhook answered 2xx), gave_up
-- (final: the last retry of the schedule failed; shown to the operator, who
-- may send it again from the console, which makes it pending).
create table billing.checkout_events (
  event_id text primary key,
  sandbox_id uuid not null,
  payment_id text not null,
  -- the event exactly as it is signed and sent, every time
  payload text not null,
  state text not null default 'pending'
    check (state in ('pending', 'delivered', 'gave_up')),
  attempts int not null default 0,
  next_attempt_at timestamptz not null default now(),
  -- a claim's own token: a sender whose lease ran out changes nothing
  lease_token uuid,
  last_status smallint,
  last_error text,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  -- the last operator who sent a given-up event again, and when
  resent_by text,
  resent_at timestamptz
);
-- The sender's work list: only what is still owed.
create index checkout_events_due on billing.checkout_events (next_attempt_at)
  where state = 'pending';
create index checkout_events_by_payment on billing.checkout_events (payment_id);

select platform.enable_sandbox_rls('billing.checkout_events');
