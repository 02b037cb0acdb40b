/**
 * Opening a payment: what a pay request asks billing for, before the card
 * network or Stripe Checkout is involved. The payment records the amount
 * and currency the order needs, so that the webhook can tell a charge that
 * is not the order's without reading the orders schema; one payment per
 * order at a time.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService, type ServiceTx } from "../../lib/db/service.ts";

/** The bakery's prices are euro cents (services/menu.ts). */
export const CURRENCY = "eur";

/**
 * Payment states, mirrored by the CHECK on billing.payments
 * (migrations/0004_bakery.sql).
 *
 * - `pending`: opened by a pay request; moved out by billing when a Stripe
 *   event about it arrives.
 * - `succeeded`: final; PaymentSucceeded was sent.
 * - `failed`: declined, or its checkout expired; the order may be paid
 *   again. Moved out by billing when a success arrives for it after all:
 *   Stripe Checkout keeps a declined payment's session open, and a card
 *   tried there settles this same payment.
 * - `refund_due`: money was taken, but the charge is not the order's
 *   (another amount or currency, or a payment billing never opened). Final
 *   here: nothing is sent, the console lists it, an operator refunds it.
 */
export type PaymentState = "pending" | "succeeded" | "failed" | "refund_due";

/**
 * A pending payment younger than this still stands for the order: a Stripe
 * Checkout session expires after 24 hours by default. An older one will not
 * be paid any more and no longer keeps a new pay request out (should it be
 * paid after all, the orders service keeps it for a refund).
 */
const OPEN_FOR = "24 hours";

export interface OpenPayment {
  id: string;
  orderId: string;
  /** What the order needs; the webhook compares the charge with both. */
  amountCents: number;
  currency?: string;
  cardLast4?: string;
}

export interface OpenedPayment {
  id: string;
  state: PaymentState;
  /** False when the order had a payment under way or paid already. */
  created: boolean;
  checkoutUrl: string | null;
}

/**
 * Opens a pending payment for an order, or returns the one it has: a
 * succeeded one, a pending one (younger than a checkout lives), or a
 * failed one whose Checkout session is still open. Stripe keeps that
 * session and its PaymentIntent open after a declined card, so handing it
 * out again keeps one order from holding two sessions that can be charged.
 * Pay
 * requests for one order take a lock on the order id in turn, in billing's
 * own transaction, so ten at once make one payment. `onCreated` runs in
 * that transaction when the payment is new: what settles the payment is
 * written with it, or neither is.
 */
export async function createPayment(
  sql: Sql,
  sandboxId: string,
  p: OpenPayment,
  onCreated?: (tx: ServiceTx) => Promise<void>,
): Promise<OpenedPayment> {
  return await asService(
    sql,
    "billing",
    { tenantId: sandboxId },
    async (tx) => {
      const { sql } = tx;
      const lock = orderPaymentsLock(sql, p.orderId).execute();
      // The order's standing payment if it has one, else a new one: one
      // statement, sent behind the lock in the same round trip. Read after
      // the lock, whose failure (not the aborted statement's) is the one
      // that tells.
      const standing = sql<
        {
          id: string;
          state: PaymentState;
          checkout_url: string | null;
          created: boolean;
        }[]
      >`
      with open as (
        select id, state, checkout_url from billing.payments
         where order_id = ${p.orderId}
           and (state = 'succeeded'
                or (created_at > now() - ${OPEN_FOR}::interval
                    and (state = 'pending'
                         or (state = 'failed' and checkout_url is not null))))
         order by state = 'succeeded' desc, created_at desc
         limit 1
      ), made as (
        insert into billing.payments
          (id, tenant_id, order_id, amount_cents, currency, card_last4)
        select ${p.id}, ${sandboxId}, ${p.orderId}, ${p.amountCents},
               ${p.currency ?? CURRENCY}, ${p.cardLast4 ?? null}
         where not exists (select from open)
        returning id, state, checkout_url
      )
      select id, state, checkout_url, false as created from open
      union all
      select id, state, checkout_url, true from made`.execute();
      standing.catch(() => {});
      await lock;
      const [row] = await standing;
      if (!row.created) {
        return {
          id: row.id,
          state: row.state,
          created: false,
          checkoutUrl: row.checkout_url,
        };
      }
      await onCreated?.(tx);
      return { id: p.id, state: "pending", created: true, checkoutUrl: null };
    },
  );
}

/**
 * Waits for the order's other pay requests and Stripe events, in billing's
 * transaction; unsent. Its own statement: what runs next must see what the
 * holder before us committed, and a statement's snapshot is taken before
 * it waits. The statements behind it may be sent without waiting for it
 * (the server runs them in turn), which saves the round trip.
 */
export function orderPaymentsLock(sql: ServiceTx["sql"], orderId: string) {
  return sql`
    select pg_advisory_xact_lock(hashtextextended('billing.pay ' || ${orderId}, 0))`;
}

/** Keeps the checkout a repeated pay request gives back (Stripe mode). */
export async function setCheckoutUrl(
  sql: Sql,
  sandboxId: string,
  paymentId: string,
  url: string | null,
  failure?: string,
) {
  await asService(sql, "billing", { tenantId: sandboxId }, ({ sql }) =>
    sql`
      update billing.payments
         set checkout_url = ${url}, updated_at = now(),
             state = case when ${failure ?? null}::text is null then state
                          else 'failed' end,
             failure_reason = coalesce(${failure ?? null}, failure_reason)
       where id = ${paymentId} and state = 'pending'`);
}
