/**
 * Schedule: per order and product, a booking against the day's capacity:
 * held (OrderPlaced), reserved (OrderPaid), released (OrderCancelled). A
 * booking only moves to a higher version, so a late message never undoes a
 * later one; stale messages are answered 200 and ignored.
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

const STATE = {
  OrderPlaced: "held",
  OrderPaid: "reserved",
  OrderCancelled: "released",
} as const;

export function applyToSchedule(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (!(e.type in STATE)) throw new Refused(`schedule does not take ${e.type}`);
  const state = STATE[e.type as keyof typeof STATE];
  const p = parsePayload(e.type as keyof typeof STATE, e.payload);
  return inStatement(
    tx,
    sql`
    insert into schedule.bookings (order_id, sku, tenant_id, day, qty, state, version)
    select ${p.orderId}, l.sku, ${e.tenantId}, ${p.day}, l.qty, ${state}, ${e.aggregateVersion}
      from jsonb_to_recordset(${
      sql.json(p.lines as never)
    }) as l(sku text, qty int)
    on conflict (order_id, sku) do update
       set state = excluded.state, version = excluded.version
     where schedule.bookings.version < excluded.version
    returning sku`,
    sql`jsonb_build_object('bookings', ${state}::text,
                           'lines', (select count(*) from effect))`,
    { ignored: "stale: the bookings are at a later version" },
  );
}
