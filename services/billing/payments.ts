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
import { text } from "../../lib/http/validate.ts";

/** Opens a pending payment for an order. */
export async function createPayment(
  sql: Sql,
  sandboxId: string,
  p: { id: string; orderId: string; amountCents: number; cardLast4?: string },
) {
  await asService(sql, "billing", { sandboxId }, async ({ sql }) => {
    await sql`
      insert into billing.payments (id, sandbox_id, order_id, amount_cents, card_last4)
      values (${p.id}, ${sandboxId}, ${p.orderId}, ${p.amountCents}, ${
      p.cardLast4 ?? null
    })`;
  });
}

const uuid = z.string().uuid();

/** The parts of a Stripe event that billing reads. Unknown fields pass. */
export const stripeEventSchema = z.object({
  id: text().min(1).max(255),
  type: text().min(1).max(100),
  data: z.object({
    object: z.object({
      id: text().max(255).optional(),
      object: text().optional(),
      amount: z.number().int().optional(),
      amount_total: z.number().int().optional(),
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
}

/**
 * Records a verified Stripe event once and acts on it. Events may come twice,
 * concurrently, late or out of order:
 * - a repeat of an event id changes nothing;
 * - an event for a payment already settled records itself and changes
 *   nothing else;
 * - an event naming no sandbox or order of ours is recorded as such.
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
  const paymentId = object.object === "payment_intent"
    ? object.id ?? null
    : object.payment_intent ?? null;
  // An event that names no sandbox is still recorded, in the workers scope.
  const scope = sandboxId ? { sandboxId } : "workers" as const;
  return await asService(sql, "billing", scope, async (tx) => {
    const { sql } = tx;
    const inserted = await sql`
      insert into billing.stripe_events (event_id, sandbox_id, type, payment_id, order_id, outcome)
      values (${event.id}, ${sandboxId}, ${event.type}, ${paymentId}, ${orderId}, 'received')
      on conflict (event_id) do nothing returning event_id`;
    if (inserted.length === 0) {
      const [seen] = await sql<{ outcome: string }[]>`
        select outcome from billing.stripe_events where event_id = ${event.id}`;
      return { duplicate: true, outcome: seen?.outcome ?? "seen before" };
    }
    const outcome = await act(tx, event, { sandboxId, orderId, paymentId });
    await sql`update billing.stripe_events set outcome = ${outcome} where event_id = ${event.id}`;
    return { duplicate: false, outcome };
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
): Promise<string> {
  const succeeded = event.type === "payment_intent.succeeded";
  const failed = event.type === "payment_intent.payment_failed";
  if (!succeeded && !failed) {
    return `ignored: billing does not act on ${event.type}`;
  }
  const { sandboxId, orderId, paymentId } = ids;
  if (!sandboxId || !orderId || !paymentId) {
    return "unattributed: the payment names no sandbox and order of this bakery";
  }
  const { sql } = tx;
  const object = event.data.object;
  const amount = object.amount ?? object.amount_total ?? 0;
  // A payment Stripe created (Checkout) is first seen here.
  await sql`
    insert into billing.payments (id, sandbox_id, order_id, amount_cents)
    values (${paymentId}, ${sandboxId}, ${orderId}, ${amount})
    on conflict (id) do nothing`;
  const [payment] = await sql<
    { state: string; amount_cents: number; order_id: string }[]
  >`
    select state, amount_cents, order_id from billing.payments where id = ${paymentId} for update`;
  if (payment.state !== "pending") {
    return `late: payment ${paymentId} is ${payment.state} already; nothing changed`;
  }
  const reason = object.last_payment_error?.message ?? "the card was declined";
  await sql`
    update billing.payments
       set state = ${succeeded ? "succeeded" : "failed"},
           failure_reason = ${succeeded ? null : reason}, updated_at = now()
     where id = ${paymentId}`;
  const envelope = newEnvelope({
    type: succeeded ? "PaymentSucceeded" : "PaymentFailed",
    aggregateId: payment.order_id,
    // Billing's own aggregate is the payment: one settlement, version 1.
    aggregateVersion: 1,
    sandboxId,
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
