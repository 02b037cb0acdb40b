/**
 * Dispatch: a delivery stop for each paid delivery order; pickups need none.
 * OrderCancelled cancels a stop (there is none before payment, and a paid
 * order cannot be cancelled, so this is the rare path). A batch of
 * OrderPaid applies as one set as well (lib/inbox/apply_many.ts).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import {
  inStatement,
  jsonb,
  type ManyEffect,
  Refused,
} from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

const PICKUP = { skipped: "pickup order: no stop" };
const CONFIRMED = { stop: "confirmed" };
const STALE = { ignored: "stale: the stop is at a later version" };

export function applyToDispatch(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (e.type === "OrderPaid") {
    const p = parsePayload("OrderPaid", e.payload);
    if (p.fulfilment !== "delivery") return PICKUP;
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
      CONFIRMED,
      STALE,
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

/** A batch of OrderPaid: the delivery orders' stops, as one statement. */
export function applyManyToDispatch(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (envelopes.some((e) => e.type !== "OrderPaid")) return undefined;
  return {
    rows: envelopes.map((e) => {
      const p = parsePayload("OrderPaid", e.payload);
      return {
        order_id: p.orderId,
        delivery: p.fulfilment === "delivery" ? 1 : 0,
        customer_name: p.customer.name,
        day: p.day,
      };
    }),
    types: {
      order_id: "uuid",
      delivery: "int",
      customer_name: "text",
      day: "date",
    },
    effect: sql`
      insert into dispatch.stops (order_id, tenant_id, state, version, customer_name, day)
      select order_id, tenant_id, 'confirmed', aggregate_version, customer_name, day
        from batch where delivery = 1
      on conflict (order_id) do update set state = 'confirmed', version = excluded.version,
             updated_at = now()
       where dispatch.stops.version < excluded.version
      returning order_id`,
    answers: sql`
      select b.message_id,
             case when b.delivery = 0 then ${jsonb(sql, PICKUP)}
                  when exists (select from effect e where e.order_id = b.order_id)
                    then ${jsonb(sql, CONFIRMED)}
                  else ${jsonb(sql, STALE)} end as outcome
        from batch b`,
  };
}
