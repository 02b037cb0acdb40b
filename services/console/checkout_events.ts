/**
 * The test checkout's events that the webhook has not taken: still
 * retrying after a failed try, or given up. An event that gave up is an
 * order that stays unpaid although the visitor paid, so the console lists
 * it and an operator can send it again once the webhook works.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { readServices } from "../databases.ts";
import { type CheckoutEvents, checkoutEventsSchema } from "./contracts.ts";

/** Up to `limit` such events of one sandbox, oldest first. */
export async function undeliveredCheckoutEvents(
  sql: Sql,
  sandboxId: string,
  limit = 50,
): Promise<CheckoutEvents> {
  const rows = await readServices(
    sql,
    sandboxId,
    (at) =>
      at("billing", (sql) =>
        sql<{
          event_id: string;
          payment_id: string;
          order_id: string | null;
          state: "pending" | "gave_up";
          attempts: number;
          last_status: number | null;
          last_error: string | null;
          created_at: Date;
          next_attempt_at: Date | null;
          total: number;
        }[]>`
      select e.event_id, e.payment_id, p.order_id, e.state, e.attempts,
             e.last_status, e.last_error, e.created_at,
             case when e.state = 'pending' then e.next_attempt_at end
               as next_attempt_at,
             count(*) over ()::int as total
        from billing.checkout_events e
        left join billing.payments p on p.id = e.payment_id
       where e.state = 'gave_up' or (e.state = 'pending' and e.attempts > 0)
       order by e.created_at
       limit ${limit}`),
  );
  return checkoutEventsSchema.parse({
    total: rows[0]?.total ?? 0,
    items: rows.map((r) => ({
      eventId: r.event_id,
      paymentId: r.payment_id,
      orderId: r.order_id,
      state: r.state,
      attempts: r.attempts,
      lastStatus: r.last_status,
      lastError: r.last_error,
      createdAt: r.created_at.toISOString(),
      nextAttemptAt: r.next_attempt_at?.toISOString() ?? null,
    })),
  });
}

/**
 * Sends a given-up event again, with the whole schedule before it; false
 * when the sandbox has no such event that gave up. Who did it is kept on the
 * row.
 */
export async function sendCheckoutEventAgain(
  sql: Sql,
  sandboxId: string,
  eventId: string,
  actor: string,
): Promise<boolean> {
  const rows = await asService(
    sql,
    "billing",
    { tenantId: sandboxId },
    ({ sql }) =>
      sql`
      update billing.checkout_events
         set state = 'pending', attempts = 0, next_attempt_at = now(),
             finished_at = null, resent_by = ${actor}, resent_at = now()
       where event_id = ${eventId} and state = 'gave_up'
      returning event_id`,
  );
  return rows.length === 1;
}
