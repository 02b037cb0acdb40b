/**
 * Dispatch: a delivery stop for each paid delivery order; pickups need none.
 * OrderCancelled cancels a stop (there is none before payment, and a paid
 * order cannot be cancelled, so this is the rare path).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

export function applyToDispatch(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (e.type === "OrderPaid") {
    const p = parsePayload("OrderPaid", e.payload);
    if (p.fulfilment !== "delivery") {
      return { skipped: "pickup order: no stop" };
    }
    return inStatement(
      tx,
      sql`
      insert into dispatch.stops (order_id, tenant_id, state, version, customer_name, day)
      values (${p.orderId}, ${e.tenantId}, 'confirmed', ${e.aggregateVersion},
              ${p.customer.name}, ${p.day})
      on conflict (order_id) do update set state = 'confirmed', version = excluded.version,
             updated_at = now()
       where dispatch.stops.version < excluded.version
      returning order_id`,
      { stop: "confirmed" },
      { ignored: "stale: the stop is at a later version" },
    );
  }
  if (e.type === "OrderCancelled") {
    // Checked though only the envelope is used: malformed is refused.
    parsePayload("OrderCancelled", e.payload);
    return inStatement(
      tx,
      sql`
      update dispatch.stops set state = 'cancelled', version = ${e.aggregateVersion},
             updated_at = now()
       where order_id = ${e.aggregateId} and version < ${e.aggregateVersion}
      returning order_id`,
      { stop: "cancelled" },
      { ignored: "no stop to cancel" },
    );
  }
  throw new Refused(`dispatch does not take ${e.type}`);
}
