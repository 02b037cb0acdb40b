/**
 * What a verified Stripe event does to billing's payment: the decision
 * table of `act`, and the messages it sends to the orders service.
 */
import { type ServiceTx } from "../../lib/db/service.ts";
import {
  append,
  newEnvelope,
  outboxWrites,
  wakeAfterAppend,
} from "../../lib/outbox/mod.ts";
import {
  CURRENCY,
  orderPaymentsLock,
  type PaymentState,
} from "./open_payment.ts";
import type { StripeEvent } from "./payments.ts";

/** What billing does with each kind of Stripe event it acts on. */
type EventKind = "succeeded" | "failed" | "expired";

function kindOf(type: string): EventKind | null {
  if (type === "payment_intent.succeeded") return "succeeded";
  if (type === "payment_intent.payment_failed") return "failed";
  // A Checkout session that expired unpaid ends its payment as a declined
  // card does: the order can be paid again with a new checkout.
  if (type === "checkout.session.expired") return "expired";
  return null;
}

type Acted = string | { outcome: string; status: 422 };

interface PaymentRow {
  id: string;
  state: PaymentState;
  amount_cents: number;
  currency: string;
  order_id: string;
  created_at: Date;
}

/** What an event names, as billing reads it from the event's metadata. */
export interface EventIds {
  sandboxId: string | null;
  orderId: string | null;
  paymentId: string | null;
}

/**
 * Sends what `act` reads first, without waiting: the lock pay requests take
 * (open_payment.ts), so that whether this payment is the order's current
 * one cannot change until this event is recorded, then the payment's row.
 * The caller's statements may go in the same round trip. Nothing is sent
 * for an event `act` does not act on.
 */
export function readPayment(
  tx: ServiceTx,
  event: StripeEvent,
  ids: EventIds,
): Promise<PaymentRow | undefined> | undefined {
  const { orderId, paymentId } = ids;
  if (!kindOf(event.type) || !ids.sandboxId || !orderId || !paymentId) {
    return undefined;
  }
  const { sql } = tx;
  const lock = orderPaymentsLock(sql, orderId).execute();
  const row = sql<PaymentRow[]>`
    select id, state, amount_cents, currency, order_id, created_at
      from billing.payments where id = ${paymentId} for update`.execute();
  const read = Promise.all([lock, row]).then(([, [payment]]) => payment);
  // Read by `act`, or not at all when the event was seen before: the
  // transaction's end reports a failure either way.
  read.catch(() => {});
  return read;
}

/**
 * Moves a payment on by one event. Every path ends in a state an operator
 * can see: the payment settled, failed, or kept for a refund, and the
 * event's row says which. The decision table, by the payment's state:
 *
 * | state      | succeeded                  | failed           | expired            |
 * | ---------- | -------------------------- | ---------------- | ------------------ |
 * | (none)     | refund due (never opened)  | ignored: no money taken             |
 * | pending    | settle (or refund due)     | failed, told if current              |
 * | failed     | settle (or refund due)     | reason kept      | checkout closed    |
 * | succeeded  | late: nothing changes      | late: nothing    | late: nothing      |
 * | refund_due | late: listed for a refund  | late: nothing    | late: nothing      |
 *
 * "Settle" sends PaymentSucceeded, unless the charge is not the order's:
 * then it is kept as `refund_due`. Should another payment have paid the
 * order, the orders service keeps this one for a refund (its
 * SecondPaymentReceived). A failed payment can still be charged: Stripe Checkout
 * keeps the session and its PaymentIntent open after a declined card, and
 * the customer may try another card there.
 */
export async function act(
  tx: ServiceTx,
  event: StripeEvent,
  ids: EventIds,
  /** {@link readPayment}'s, sent before the caller waited for anything. */
  read: Promise<PaymentRow | undefined> | undefined,
): Promise<Acted> {
  const kind = kindOf(event.type);
  if (!kind) return `ignored: billing does not act on ${event.type}`;
  const { sandboxId, orderId, paymentId } = ids;
  if (!sandboxId || !orderId || !paymentId || !read) {
    return "unattributed: the payment names no sandbox and order of this bakery";
  }
  const { sql } = tx;
  const payment = await read;
  if (payment) {
    return kind === "succeeded"
      ? await settle(tx, event, sandboxId, payment, true)
      : await fail(tx, event, kind, sandboxId, payment);
  }
  if (kind !== "succeeded") {
    return `ignored: the ${event.type} event names payment ${paymentId}, which billing never opened; no money was taken`;
  }
  // Money taken for a payment that no pay request of this sandbox opened.
  // The id may still be taken: row-level security hides another sandbox's
  // payments, but the key is one for all, so the insert finds it and
  // inserts nothing.
  const charged = chargeOf(event);
  const [opened] = await sql<PaymentRow[]>`
    insert into billing.payments (id, tenant_id, order_id, amount_cents, currency)
    values (${paymentId}, ${sandboxId}, ${orderId}, ${charged.cents ?? 0},
            ${charged.currency ?? CURRENCY})
    on conflict (id) do nothing
    returning id, state, amount_cents, currency, order_id, created_at`;
  if (!opened) {
    return {
      outcome:
        `refused: payment ${paymentId} is not a payment of this sandbox; nothing changed`,
      status: 422,
    };
  }
  return await settle(tx, event, sandboxId, opened, false);
}

/** A success: the payment settles, or its charge is kept for a refund. */
async function settle(
  tx: ServiceTx,
  event: StripeEvent,
  sandboxId: string,
  payment: PaymentRow,
  opened: boolean,
): Promise<Acted> {
  const { sql } = tx;
  if (payment.state === "succeeded" || payment.state === "refund_due") {
    const what = payment.state === "succeeded"
      ? "succeeded already"
      : "kept for a refund already";
    return `late: payment ${payment.id} is ${what}; nothing changed`;
  }
  const charged = chargeOf(event);
  // Whether the order is paid already is the orders service's to say: it
  // keeps a second payment of a paid order for a refund, whichever came
  // first to billing.
  const refund = opened
    ? chargeMismatch(payment, charged)
    : "billing opened no payment for this charge";
  const update = sql`
    update billing.payments
       set charged_cents = ${charged.cents}, charged_currency = ${charged.currency},
           state = ${refund ? "refund_due" : "succeeded"},
           refund_reason = ${refund}, updated_at = now()
     where id = ${payment.id}
    returning id`;
  if (refund) {
    await update;
    return `refund due: ${refund}; PaymentSucceeded not sent`;
  }
  // The settled payment and its message in one statement, as the orders
  // service writes a paid order and its OrderPaid.
  const succeeded = settlement(sandboxId, payment, {
    type: "PaymentSucceeded",
    payload: {
      paymentId: payment.id,
      orderId: payment.order_id,
      amountCents: payment.amount_cents,
    },
  });
  await sql`
    with settled as (${update}),
    ${outboxWrites(tx, [succeeded], sql`exists (select from settled)`)}
    select`;
  await wakeAfterAppend(tx);
  return payment.state === "failed"
    ? "payment succeeded after a declined attempt; PaymentSucceeded sent"
    : "payment succeeded; PaymentSucceeded sent";
}

/**
 * A declined card or an expired checkout. The order hears of it only when
 * the payment is its current one: a failure of an older payment, while a
 * newer one is open or paid, changes nothing in the order.
 */
async function fail(
  tx: ServiceTx,
  event: StripeEvent,
  kind: "failed" | "expired",
  sandboxId: string,
  payment: PaymentRow,
): Promise<Acted> {
  const { sql } = tx;
  // Stripe's own words, as long as a PaymentFailed may carry
  // (services/events.ts): a longer one would be refused by the orders
  // service, and the order never told.
  const reason = kind === "expired"
    ? "the checkout expired before it was paid"
    : event.data.object.last_payment_error?.message?.trim().slice(0, 1000)
      .toWellFormed() ||
      "the card was declined";
  if (payment.state === "succeeded" || payment.state === "refund_due") {
    return `late: payment ${payment.id} is ${payment.state} already; nothing changed`;
  }
  // An expired session can no longer be paid: a new pay request opens a
  // new checkout instead of handing this one out again.
  await sql`
    update billing.payments
       set state = 'failed', failure_reason = ${reason}, updated_at = now(),
           checkout_url = case when ${kind === "expired"} then null
                               else checkout_url end
     where id = ${payment.id}`;
  if (payment.state === "failed") {
    return `late: payment ${payment.id} was failed already (${reason}); the order was told before`;
  }
  const [newer] = await sql<{ id: string }[]>`
    select id from billing.payments
     where order_id = ${payment.order_id} and id <> ${payment.id}
       and (created_at > ${payment.created_at} or state = 'succeeded')
     order by created_at desc
     limit 1`;
  if (newer) {
    return `payment failed: ${reason}; PaymentFailed not sent, payment ${newer.id} is the order's current one`;
  }
  await append(tx, [settlement(sandboxId, payment, {
    type: "PaymentFailed",
    payload: { paymentId: payment.id, orderId: payment.order_id, reason },
  })]);
  return `payment failed: ${reason}`;
}

/** Billing's message about a payment: its own aggregate, one settlement. */
function settlement(
  sandboxId: string,
  payment: PaymentRow,
  message: { type: string; payload: Record<string, unknown> },
) {
  return newEnvelope({
    ...message,
    aggregateId: payment.order_id,
    aggregateVersion: 1,
    tenantId: sandboxId,
  });
}

function chargeOf(event: StripeEvent) {
  const object = event.data.object;
  return {
    cents: object.amount ?? object.amount_total ?? null,
    currency: object.currency?.toLowerCase() ?? null,
  };
}

/**
 * Why a charge is not the one the payment was opened for, or null when it
 * is: the same amount in the same currency. A charge that names no amount
 * or currency does not match either.
 */
function chargeMismatch(
  expected: { amount_cents: number; currency: string },
  charged: { cents: number | null; currency: string | null },
): string | null {
  if (
    charged.cents === expected.amount_cents &&
    charged.currency === expected.currency
  ) {
    return null;
  }
  return `charged ${charged.cents ?? "no amount"} ${
    charged.currency ?? "in no currency"
  }, the order is ${expected.amount_cents} ${expected.currency}`;
}
