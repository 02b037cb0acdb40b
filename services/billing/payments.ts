/**
 * Billing: payments and the Stripe events that settle them. A Stripe event
 * is recorded by its id exactly once; the payment's new state and the
 * message it owes (PaymentSucceeded or PaymentFailed) are written in the same
 * billing transaction.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { append, newEnvelope } from "../../lib/outbox/mod.ts";
import { z } from "zod";
import { CURRENCY, type PaymentState } from "./open_payment.ts";
import { text } from "../../kit/http/validate.ts";

const uuid = z.string().uuid();

/** The parts of a Stripe event that billing reads. Unknown fields pass. */
export const stripeEventSchema = z.object({
  id: text().min(1).max(255),
  type: text().min(1).max(100),
  data: z.object({
    object: z.object({
      id: text().max(255).optional(),
      object: text().optional(),
      // Stripe's largest amount is eight digits.
      amount: z.number().int().min(0).max(99_999_999).optional(),
      amount_total: z.number().int().min(0).max(99_999_999).optional(),
      currency: text().max(10).optional(),
      payment_intent: text().nullish(),
      metadata: z.record(z.string(), text()).nullish(),
      last_payment_error: z.object({ message: text().optional() })
        .nullish(),
    }).passthrough(),
  }),
}).passthrough();

export type StripeEvent = z.output<typeof stripeEventSchema>;

export interface EventOutcome {
  duplicate: boolean;
  outcome: string;
  /** 422: refused (a payment id of another sandbox), now and on a repeat. */
  status: 200 | 422;
}

/**
 * Records a verified Stripe event once and acts on it. Events may come twice,
 * concurrently, late or out of order:
 * - a repeat of an event id changes nothing;
 * - an event for a payment already settled records itself and changes
 *   nothing else;
 * - an event naming no sandbox or order of ours is recorded as such;
 * - a success whose charge is not the order's (amount, currency, or a
 *   payment billing never opened) makes the payment `refund_due` and sends
 *   nothing;
 * - an event naming a payment of another sandbox is refused (422) and
 *   recorded, in the sandbox it names.
 */
export async function recordStripeEvent(
  sql: Sql,
  event: StripeEvent,
): Promise<EventOutcome> {
  const object = event.data.object;
  const metadata = object.metadata ?? {};
  const sandboxId = uuid.safeParse(metadata.sandboxId).success
    ? metadata.sandboxId!
    : null;
  const orderId = uuid.safeParse(metadata.orderId).success
    ? metadata.orderId!
    : null;
  // Stripe Checkout's payment intent is made by Stripe, after the pay
  // request opened the payment: it carries that payment's id in metadata.
  const paymentId = metadata.paymentId ??
    (object.object === "payment_intent"
      ? object.id ?? null
      : object.payment_intent ?? null);
  // An event that names no sandbox is still recorded, in the workers scope.
  const scope = sandboxId ? { tenantId: sandboxId } : "workers" as const;
  return await asService(sql, "billing", scope, async (tx) => {
    const { sql } = tx;
    const inserted = await sql`
      insert into billing.stripe_events (event_id, tenant_id, type, payment_id, order_id, outcome)
      values (${event.id}, ${sandboxId}, ${event.type}, ${paymentId}, ${orderId}, 'received')
      on conflict (event_id) do nothing returning event_id`;
    if (inserted.length === 0) {
      const [seen] = await sql<{ outcome: string; status: 200 | 422 }[]>`
        select outcome, status from billing.stripe_events
         where event_id = ${event.id}`;
      return {
        duplicate: true,
        outcome: seen?.outcome ?? "seen before",
        status: seen?.status ?? 200,
      };
    }
    const acted = await act(tx, event, { sandboxId, orderId, paymentId });
    const { outcome, status } = typeof acted === "string"
      ? { outcome: acted, status: 200 as const }
      : acted;
    await sql`
      update billing.stripe_events set outcome = ${outcome}, status = ${status}
       where event_id = ${event.id}`;
    return { duplicate: false, outcome, status };
  });
}

async function act(
  tx: Parameters<Parameters<typeof asService>[3]>[0],
  event: StripeEvent,
  ids: {
    sandboxId: string | null;
    orderId: string | null;
    paymentId: string | null;
  },
): Promise<string | { outcome: string; status: 422 }> {
  const succeeded = event.type === "payment_intent.succeeded";
  // A Checkout session that expired unpaid ends its payment as a declined
  // card does: the order can be paid again with a new checkout.
  const expired = event.type === "checkout.session.expired";
  const failed = event.type === "payment_intent.payment_failed" || expired;
  if (!succeeded && !failed) {
    return `ignored: billing does not act on ${event.type}`;
  }
  const { sandboxId, orderId, paymentId } = ids;
  if (!sandboxId || !orderId || !paymentId) {
    return "unattributed: the payment names no sandbox and order of this bakery";
  }
  const { sql } = tx;
  const object = event.data.object;
  const charged = {
    cents: object.amount ?? object.amount_total ?? null,
    currency: object.currency?.toLowerCase() ?? null,
  };
  type Row = {
    state: PaymentState;
    amount_cents: number;
    currency: string;
    order_id: string;
  };
  let [payment] = await sql<Row[]>`
    select state, amount_cents, currency, order_id from billing.payments
     where id = ${paymentId} for update`;
  let opened = true;
  if (!payment && expired) {
    return `ignored: the expired checkout names payment ${paymentId}, which billing never opened`;
  }
  if (!payment) {
    // Not opened by a pay request of this sandbox. The id may still be
    // taken: row-level security hides another sandbox's payments, but the
    // key is one for all, so the insert finds it and inserts nothing.
    [payment] = await sql<Row[]>`
      insert into billing.payments (id, tenant_id, order_id, amount_cents, currency)
      values (${paymentId}, ${sandboxId}, ${orderId}, ${charged.cents ?? 0},
              ${charged.currency ?? CURRENCY})
      on conflict (id) do nothing
      returning state, amount_cents, currency, order_id`;
    if (!payment) {
      return {
        outcome:
          `refused: payment ${paymentId} is not a payment of this sandbox; nothing changed`,
        status: 422,
      };
    }
    opened = false;
  }
  if (payment.state !== "pending") {
    return `late: payment ${paymentId} is ${payment.state} already; nothing changed`;
  }
  if (succeeded) {
    const mismatch = opened
      ? chargeMismatch(payment, charged)
      : "billing opened no payment for this charge";
    await sql`
      update billing.payments
         set charged_cents = ${charged.cents}, charged_currency = ${charged.currency},
             state = ${mismatch ? "refund_due" : "succeeded"},
             refund_reason = ${mismatch}, updated_at = now()
       where id = ${paymentId}`;
    if (mismatch) {
      return `refund due: ${mismatch}; PaymentSucceeded not sent`;
    }
  }
  const reason = expired
    ? "the checkout expired before it was paid"
    : object.last_payment_error?.message ?? "the card was declined";
  if (failed) {
    await sql`
      update billing.payments
         set state = 'failed', failure_reason = ${reason}, updated_at = now()
       where id = ${paymentId}`;
  }
  const envelope = newEnvelope({
    type: succeeded ? "PaymentSucceeded" : "PaymentFailed",
    aggregateId: payment.order_id,
    // Billing's own aggregate is the payment: one settlement, version 1.
    aggregateVersion: 1,
    tenantId: sandboxId,
    payload: succeeded
      ? {
        paymentId,
        orderId: payment.order_id,
        amountCents: payment.amount_cents,
      }
      : { paymentId, orderId: payment.order_id, reason },
  });
  await append(tx, [envelope]);
  return succeeded
    ? "payment succeeded; PaymentSucceeded sent"
    : `payment failed: ${reason}`;
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
