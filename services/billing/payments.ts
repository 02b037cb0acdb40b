/**
 * Billing: payments and the Stripe events that settle them. A Stripe event
 * is recorded by its id exactly once; the payment's new state and the
 * message it owes (PaymentSucceeded or PaymentFailed) are written in the same
 * billing transaction.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService, rolledBackBy } from "../../lib/db/service.ts";
import { z } from "zod";
import { act, readPayment } from "./settle.ts";
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
 * - a repeat of an event id changes nothing and gets the first answer;
 * - an event naming no sandbox or order of ours is recorded as such;
 * - an event naming a payment of another sandbox is refused (422) and
 *   recorded, in the sandbox it names;
 * - any other moves the payment on as `act` (settle.ts) decides, and its
 *   row says what became of it.
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
  const ids = { sandboxId, orderId, paymentId };
  /** The event's outcome, sent with the COMMIT. */
  let noted: Promise<unknown> | undefined;
  try {
    return await asService(sql, "billing", scope, async (tx) => {
      const { sql } = tx;
      // The event's row, then what `act` reads (the order's lock and the
      // payment), in one round trip: a repeat has the lock for nothing.
      const inserted = sql`
      insert into billing.stripe_events (event_id, tenant_id, type, payment_id, order_id, outcome)
      values (${event.id}, ${sandboxId}, ${event.type}, ${paymentId}, ${orderId}, 'received')
      on conflict (event_id) do nothing returning event_id`.execute();
      const read = readPayment(tx, event, ids);
      if ((await inserted).length === 0) {
        const [seen] = await sql<{ outcome: string; status: 200 | 422 }[]>`
        select outcome, status from billing.stripe_events
         where event_id = ${event.id}`;
        return {
          duplicate: true,
          outcome: seen?.outcome ?? "seen before",
          status: seen?.status ?? 200,
        };
      }
      const acted = await act(tx, event, ids, read);
      const { outcome, status } = typeof acted === "string"
        ? { outcome: acted, status: 200 as const }
        : acted;
      // Sent, not awaited: the COMMIT goes right behind it. Should it fail,
      // the COMMIT rolls back, and its error is thrown below.
      noted = sql`
      update billing.stripe_events set outcome = ${outcome}, status = ${status}
       where event_id = ${event.id}`.execute();
      noted.catch(() => {});
      return { duplicate: false, outcome, status };
    });
  } catch (error) {
    throw await rolledBackBy(error, noted);
  }
}
