-- Payments that do not add up. The pay request opens the payment with the
-- amount and the currency the order needs; the webhook compares what Stripe
-- charged with both, and keeps a charge that is not the order's as a
-- payment that needs a refund instead of telling the orders service it was
-- paid.

-- What the pay request asked for (amount_cents is already there), what
-- Stripe says it charged, and the checkout a repeated pay request returns.
alter table billing.payments
  add column currency text not null default 'eur',
  add column charged_cents int,
  add column charged_currency text,
  add column refund_reason text,
  add column checkout_url text;

-- Payment states: pending (opened by a pay request; moved out by a Stripe
-- event), succeeded (final), failed (final for this payment; the order may
-- be paid again), refund_due (money was taken but the charge is not the
-- order's: another amount or currency, or a payment billing never opened;
-- final here, shown to the operator, who refunds it in Stripe).
alter table billing.payments drop constraint payments_state_check;
alter table billing.payments add constraint payments_state_check
  check (state in ('pending', 'succeeded', 'failed', 'refund_due'));

-- The answer each Stripe event got, so that a repeat gets it again: 200,
-- or 422 when billing refused it (a payment id of another sandbox).
alter table billing.stripe_events
  add column status smallint not null default 200
    check (status in (200, 422));

-- The console's list of payments needing a refund: billing's own, and the
-- payments the orders service kept for a refund (a second payment of a paid
-- order, a payment of a cancelled one). Both are few.
create index payments_refund_due on billing.payments (sandbox_id, updated_at)
  where state = 'refund_due';
create index events_needing_refund on orders.events (sandbox_id, at)
  where payload->>'action' = 'refund';
