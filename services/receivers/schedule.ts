/**
 * Schedule: per order and product, a booking against the day's capacity:
 * held (OrderPlaced), reserved (OrderPaid), released (OrderCancelled). A
 * booking only moves to a higher version, so a late message never undoes a
 * later one; stale messages are answered 200 and ignored. A batch applies
 * as one set as well (lib/inbox/apply_many.ts).
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

const STATE = {
  OrderPlaced: "held",
  OrderPaid: "reserved",
  OrderCancelled: "released",
} as const;

const STALE = { ignored: "stale: the bookings are at a later version" };

/** The bookings `e` asks for: its order, day, lines and their state. */
function bookingsOf(e: Envelope) {
  if (!(e.type in STATE)) throw new Refused(`schedule does not take ${e.type}`);
  const type = e.type as keyof typeof STATE;
  const p = parsePayload(type, e.payload);
  return {
    order_id: p.orderId,
    day: p.day,
    lines: p.lines,
    state: STATE[type],
  };
}

export function applyToSchedule(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const b = bookingsOf(e);
  return inStatement(
    tx,
    sql`
    insert into schedule.bookings (order_id, sku, tenant_id, day, qty, state, version)
    select ${b.order_id}, l.sku, ${e.tenantId}, ${b.day}, l.qty, ${b.state}, ${e.aggregateVersion}
      from jsonb_to_recordset(${
      sql.json(b.lines as never)
    }) as l(sku text, qty int)
    on conflict (order_id, sku) do update
       set state = excluded.state, version = excluded.version
     where schedule.bookings.version < excluded.version
    returning sku`,
    sql`jsonb_build_object('bookings', ${b.state}::text,
                           'lines', (select count(*) from effect))`,
    STALE,
  );
}

export function applyManyToSchedule(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (envelopes.some((e) => !(e.type in STATE))) return undefined;
  return {
    rows: envelopes.map(bookingsOf),
    types: { order_id: "uuid", day: "date", lines: "jsonb", state: "text" },
    // One message an order (lib/inbox/apply_many.ts): no booking is
    // written twice by one statement.
    effect: sql`
      insert into schedule.bookings (order_id, sku, tenant_id, day, qty, state, version)
      select b.order_id, l.sku, b.tenant_id, b.day, l.qty, b.state, b.aggregate_version
        from batch b
        cross join lateral jsonb_to_recordset(b.lines) as l(sku text, qty int)
      on conflict (order_id, sku) do update
         set state = excluded.state, version = excluded.version
       where schedule.bookings.version < excluded.version
      returning order_id`,
    answers: sql`
      select b.message_id,
             case when e.n > 0
               then jsonb_build_object('bookings', b.state, 'lines', e.n)
               else ${jsonb(sql, STALE)} end as outcome
        from batch b
        cross join lateral (
          select count(*) as n from effect e where e.order_id = b.order_id) e`,
  };
}
