/**
 * Payments that need a refund, for the console: money taken that no order
 * keeps. Billing's own (a charge that is not the order's: another amount or
 * currency, or a payment it never opened) and the orders service's (a
 * second payment of a paid order, a payment of a cancelled one), newest
 * first. Read as the `console` role inside the operator's sandbox.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { readServices, sharingDatabases } from "../databases.ts";
import { type RefundsDue, refundsDueSchema } from "./contracts.ts";

export type { RefundDue } from "./contracts.ts";

/** Why the orders service kept a payment, by the event it recorded. */
const ORDERS_REASONS: Record<string, string> = {
  SecondPaymentReceived: "the order was paid already by another payment",
  PaymentAfterCancel: "the order was cancelled",
};

/** Up to `limit` refunds due of one sandbox, and how many there are. */
export async function refundsDue(
  sql: Sql,
  sandboxId: string,
  limit = 50,
): Promise<RefundsDue> {
  type Row = {
    payment_id: string;
    order_id: string;
    amount_cents: number;
    currency: string | null;
    reason: string;
    kept_by: "billing" | "orders";
    at: Date;
    total: number;
  };
  // Billing's payments and the orders service's refund events: one
  // statement where they share a database, one each in split mode.
  const parts = await readServices(sql, sandboxId, async (at, _, together) => {
    const parts: Row[][] = [];
    for (const group of sharingDatabases(["billing", "orders"], together)) {
      parts.push(
        await at(group[0], (sql) => {
          const kept = {
            billing: sql`
            select id as payment_id, order_id,
                   coalesce(charged_cents, amount_cents) as amount_cents,
                   coalesce(charged_currency, currency) as currency,
                   refund_reason as reason, 'billing' as kept_by,
                   updated_at as at
              from billing.payments where state = 'refund_due'`,
            orders: sql`
            select payload->>'paymentId' as payment_id, order_id,
                   (payload->>'amountCents')::int as amount_cents,
                   null::text as currency, type as reason,
                   'orders' as kept_by, at
              from orders.events where payload->>'action' = 'refund'`,
          };
          const union = group.map((s) => kept[s as keyof typeof kept]).reduce((
            all,
            one,
          ) => sql`${all} union all ${one}`);
          return sql<Row[]>`
          select *, count(*) over ()::int as total from (${union}) r
           order by at desc limit ${limit}`;
        }),
      );
    }
    return parts;
  });
  // Each statement counts its own rows; the newest `limit` of them all.
  const total = parts.reduce((n, rows) => n + (rows[0]?.total ?? 0), 0);
  const rows = parts.flat();
  if (parts.length > 1) rows.sort((a, b) => +b.at - +a.at).splice(limit);
  return refundsDueSchema.parse({
    total,
    items: rows.map((r) => ({
      paymentId: r.payment_id,
      orderId: r.order_id,
      amountCents: r.amount_cents,
      currency: r.currency,
      reason: r.kept_by === "orders"
        ? ORDERS_REASONS[r.reason] ?? r.reason
        : r.reason,
      keptBy: r.kept_by,
      at: r.at.toISOString(),
    })),
  });
}
