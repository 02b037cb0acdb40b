/**
 * The checker: after the drill has settled, it reads each service's tables
 * directly (never the app's API or its closure) and holds them to the list
 * of pay requests the bakery accepted.
 *
 * - lost: an accepted order that is not paid; or a paid order's OrderPaid
 *   that a receiver never applied and that no delivery still holds;
 * - doubled: an effect there more than once: a payment, an OrderPaid
 *   event, a kitchen card, a booking, a stop, a receipt, a CRM interaction
 *   or a customer's history row of one order and kind;
 * - out of order: a receiver that applied an order's OrderPaid whose state
 *   is not the paid one (an older instruction applied after it);
 * - stuck: outbox rows still owed, deliveries pending or in flight, and
 *   dead letters left.
 *
 * It also times each accepted order from its 202 to the sixth receiver's
 * inbox row of its OrderPaid, and finds the longest stall between two
 * such arrivals while orders were being paid.
 */
import type { Sql } from "../lib/db/connect.ts";
import type { AcceptedPay } from "./shoppers.ts";
import { readBacklog, type Stores } from "./stores.ts";
// The receivers' names only: what each holds is read from its tables.
import { RECEIVERS } from "../services/routing.ts";

export interface Verdict {
  accepted: number;
  paid: number;
  lost: number;
  doubled: number;
  outOfOrder: number;
  stuck: number;
  detail: {
    notPaid: number;
    vanished: Record<string, number>;
    doubledBy: Record<string, number>;
    outOfOrderBy: Record<string, number>;
    stuckBy: Record<string, number>;
  };
  latencyMs: { p50: number | null; p99: number | null; max: number | null };
  longestStall: { ms: number; fromMs: number; toMs: number } | null;
  /** Each accepted order: accepted at, and reached all six at (epoch ms). */
  orders: { at: number; doneAt: number | null }[];
}

/** Sum of (n - 1) over groups of one key holding n rows. */
async function extra(query: Promise<{ n: number }[]>): Promise<number> {
  const rows = await query;
  return rows.reduce((sum, r) => sum + r.n - 1, 0);
}

export async function check(
  stores: Stores,
  accepted: AcceptedPay[],
): Promise<Verdict> {
  const orders = stores.at("orders");
  const state = new Map(
    (await orders<{ id: string; state: string; fulfilment: string }[]>`
      select id::text, state, fulfilment from orders.orders`)
      .map((r) => [r.id, r]),
  );
  const notPaid = accepted.filter((a) =>
    state.get(a.orderId)?.state !== "paid"
  );
  const paidIds = [...state.values()].filter((o) => o.state === "paid")
    .map((o) => o.id);

  const billing = stores.at("billing");
  const at = (s: string) => stores.at(s);
  const doubledBy: Record<string, number> = {
    payments: await extra(billing<{ n: number }[]>`
      select count(*)::int as n from billing.payments
       where state = 'succeeded' group by order_id having count(*) > 1`),
    orderPaidEvents: await extra(orders<{ n: number }[]>`
      select count(*)::int as n from orders.events
       where type = 'OrderPaid' group by order_id having count(*) > 1`),
    kitchenCards: await extra(at("kitchen")<{ n: number }[]>`
      select count(*)::int as n from kitchen.cards
       group by order_id having count(*) > 1`),
    bookings: await extra(at("schedule")<{ n: number }[]>`
      select count(*)::int as n from schedule.bookings
       group by order_id, sku having count(*) > 1`),
    stops: await extra(at("dispatch")<{ n: number }[]>`
      select count(*)::int as n from dispatch.stops
       group by order_id having count(*) > 1`),
    receipts: await extra(at("receipts")<{ n: number }[]>`
      select count(*)::int as n from receipts.receipts
       group by order_id having count(*) > 1`),
    crmInteractions: await extra(at("crm")<{ n: number }[]>`
      select count(*)::int as n from crm.interactions
       group by order_id, kind having count(*) > 1`),
    customerHistory: await extra(at("customers")<{ n: number }[]>`
      select count(*)::int as n from customers.history
       group by order_id, event having count(*) > 1`),
  };

  // When each receiver applied each order's OrderPaid (epoch ms).
  const appliedAt = new Map<string, Map<string, number>>();
  for (const r of RECEIVERS) {
    const sql = at(r);
    const rows = await sql<{ order_id: string; at: number }[]>`
      select aggregate_id as order_id,
             (extract(epoch from min(received_at)) * 1000)::float8 as at
        from ${sql(`${r}.inbox`)}
       where type = 'OrderPaid' and status = 200
       group by aggregate_id`;
    appliedAt.set(r, new Map(rows.map((x) => [x.order_id, x.at])));
  }

  // Deliveries of OrderPaid still open or dead: not lost, stuck.
  const open = new Set<string>();
  for (const sql of stores.queues()) {
    const rows = await sql<{ key: string }[]>`
      select subscriber || ' ' || aggregate_id as key from queue.deliveries
       where type = 'OrderPaid' and state <> 'done'`;
    for (const { key } of rows) open.add(key);
  }
  const vanished: Record<string, number> = {};
  for (const r of RECEIVERS) {
    vanished[r] = paidIds.filter((id) =>
      !appliedAt.get(r)!.has(id) && !open.has(`${r} ${id}`)
    ).length;
  }

  const outOfOrderBy = await outOfOrder(stores, appliedAt, paidIds, state);
  const backlog = await readBacklog(stores);
  const stuckBy = {
    outbox: backlog.outbox,
    pending: backlog.pending,
    inFlight: backlog.inFlight,
    dead: backlog.dead,
  };

  const timed = accepted.map((a) => {
    const times = RECEIVERS.map((r) => appliedAt.get(r)!.get(a.orderId));
    const done = times.every((t) => t !== undefined)
      ? Math.max(...(times as number[]))
      : null;
    return { at: a.at, doneAt: done };
  });
  const sum = (o: Record<string, number>) =>
    Object.values(o).reduce((a, b) => a + b, 0);
  return {
    accepted: accepted.length,
    paid: paidIds.length,
    lost: notPaid.length + sum(vanished),
    doubled: sum(doubledBy),
    outOfOrder: sum(outOfOrderBy),
    stuck: sum(stuckBy),
    detail: {
      notPaid: notPaid.length,
      vanished,
      doubledBy,
      outOfOrderBy,
      stuckBy,
    },
    latencyMs: latency(timed),
    longestStall: longestStall(timed),
    orders: timed,
  };
}

/**
 * Paid orders whose receiver applied OrderPaid but holds an older state:
 * the kitchen's card not confirmed, a booking not reserved, a delivery's
 * stop not confirmed.
 */
async function outOfOrder(
  stores: Stores,
  appliedAt: Map<string, Map<string, number>>,
  paidIds: string[],
  state: Map<string, { fulfilment: string }>,
): Promise<Record<string, number>> {
  const behind = async (
    receiver: string,
    query: (sql: Sql) => Promise<{ order_id: string }[]>,
  ) => {
    const applied = appliedAt.get(receiver)!;
    const rows = await query(stores.at(receiver));
    const wrong = new Set(rows.map((r) => r.order_id));
    return paidIds.filter((id) => applied.has(id) && wrong.has(id)).length;
  };
  const deliveries = paidIds.filter((id) =>
    state.get(id)?.fulfilment === "delivery"
  );
  return {
    kitchen: await behind("kitchen", (sql) =>
      sql<{ order_id: string }[]>`
        select order_id::text from kitchen.cards
         where order_id::text = any(${paidIds}) and state <> 'confirmed'`),
    schedule: await behind("schedule", (sql) =>
      sql<{ order_id: string }[]>`
        select distinct order_id::text from schedule.bookings
         where order_id::text = any(${paidIds}) and state <> 'reserved'`),
    dispatch: await behind("dispatch", (sql) =>
      sql<{ order_id: string }[]>`
        select ids.id as order_id from unnest(${deliveries}::text[]) ids(id)
          left join dispatch.stops s on s.order_id::text = ids.id
         where s.state is distinct from 'confirmed'`),
  };
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(
    sorted.length - 1,
    Math.ceil((p / 100) * sorted.length) - 1,
  );
  return Math.round(sorted[Math.max(0, i)]);
}

function latency(orders: { at: number; doneAt: number | null }[]) {
  const ms = orders.filter((o) => o.doneAt !== null)
    .map((o) => Math.max(0, o.doneAt! - o.at)).sort((a, b) => a - b);
  return {
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    max: ms.length ? Math.round(ms[ms.length - 1]) : null,
  };
}

/**
 * The longest time with no order reaching its sixth receiver, while the
 * shoppers' orders were coming in (from the first 202 to the last).
 */
function longestStall(orders: { at: number; doneAt: number | null }[]) {
  if (orders.length < 2) return null;
  const first = Math.min(...orders.map((o) => o.at));
  const last = Math.max(...orders.map((o) => o.at));
  const times = orders.filter((o) => o.doneAt !== null)
    .map((o) => o.doneAt!).filter((t) => t >= first)
    .sort((a, b) => a - b);
  let best = { ms: 0, fromMs: first, toMs: first };
  let previous = first;
  for (const t of times) {
    if (previous <= last && t - previous > best.ms) {
      best = { ms: Math.round(t - previous), fromMs: previous, toMs: t };
    }
    previous = t;
  }
  return best;
}
