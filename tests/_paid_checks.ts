/**
 * What a test that pays orders under faults checks at the end: every
 * delivery done once and applied once by its receiver (lost 0), every
 * effect once per order (doubled 0), and each sandbox's closure owing
 * nothing.
 */
import assert from "node:assert/strict";
import { until } from "./_main.ts";
import type { Sql } from "../lib/db/connect.ts";
import { ROUTING, SUBSCRIBERS } from "../services/routing.ts";
import {
  Client,
  countOf,
  payVia,
  placeOrderVia,
  signIn,
  walkthroughOrder,
} from "./_app.ts";

/**
 * `clients` sandboxes, each placing and paying `perClient` orders in turn
 * on the bakery at `base`. `paid` counts the orders paid so far;
 * `loading()` throws the load's error once it has failed.
 */
export async function payingLoad(
  base: string,
  clients: number,
  perClient: number,
) {
  const all = Array.from({ length: clients }, () => new Client(base));
  await Promise.all(all.map((c, i) => signIn(c, `Load ${i + 1}`)));
  const load = {
    clients: all,
    paid: 0,
    done: Promise.resolve() as Promise<unknown>,
    loading: () => {
      if (failed) throw failed;
      return true;
    },
  };
  let failed: unknown;
  load.done = Promise.all(all.map(async (client) => {
    for (let i = 0; i < perClient; i++) {
      const { orderId } = await placeOrderVia(client, walkthroughOrder());
      await payVia(client, orderId);
      load.paid++;
    }
  }));
  load.done.catch((error) => failed = error);
  return load;
}

/** Deliveries one paid order makes: 3 OrderPlaced, 1 payment, 6 OrderPaid. */
export const PER_ORDER = ["OrderPlaced", "PaymentSucceeded", "OrderPaid"]
  .reduce((n, type) => n + ROUTING[type].length, 0);

/** How far the paid orders have got. */
export interface Progress {
  paid: number;
  unpublished: number;
  deliveries: number;
  done: number;
  dead: number;
}

export async function progress(sql: Sql): Promise<Progress> {
  const [row] = await sql<Progress[]>`
    select (select count(*) from orders.orders where state = 'paid')::int
             as paid,
           ((select count(*) from orders.outbox)
            + (select count(*) from billing.outbox))::int as unpublished,
           (select count(*) from queue.deliveries)::int as deliveries,
           (select count(*) from queue.deliveries where state = 'dead')::int
             as dead,
           (select count(*) from queue.deliveries where state = 'done')::int
             as done`;
  return row;
}

/**
 * Waits until `orders` paid orders are the only ones and have settled:
 * every outbox row published, every delivery made and done. A dead letter
 * fails at once (it stays dead). On failure the error says what was last
 * seen, and what `explain` adds.
 */
export async function allSettled(
  sql: Sql,
  orders: number,
  ms = 90_000,
  explain: () => Promise<string> = () => Promise.resolve(""),
) {
  let last: Progress | undefined;
  try {
    await until("every delivery of every paid order to be done", async () => {
      last = await progress(sql);
      if (last.dead > 0) throw new Error("a delivery is dead");
      return last.paid === orders && last.unpublished === 0 &&
        last.deliveries === orders * PER_ORDER &&
        last.done === last.deliveries;
    }, ms);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; last seen: ${
        JSON.stringify(last)
      }${await explain()}`,
    );
  }
}

/** Lost 0 and doubled 0 for `orders` paid orders, the only ones made. */
export async function assertPaidOnce(sql: Sql, orders: number) {
  // Lost 0: every delivery done, one per message and subscriber.
  const deliveries = await sql<
    { subscriber: string; type: string; state: string; n: number }[]
  >`select subscriber, type, state, count(*)::int as n
    from queue.deliveries group by 1, 2, 3 order by 1, 2, 3`;
  const expected = Object.entries(ROUTING)
    .filter(([type]) =>
      ["OrderPlaced", "PaymentSucceeded", "OrderPaid"].includes(type)
    )
    .flatMap(([type, subscribers]) =>
      subscribers.map((subscriber) => ({
        subscriber,
        type,
        state: "done",
        n: orders,
      }))
    )
    .sort((a, b) =>
      a.subscriber.localeCompare(b.subscriber) ||
      a.type.localeCompare(b.type)
    );
  assert.deepEqual(deliveries.map((d) => ({ ...d })), expected);
  assert.equal(
    await countOf(sql`select count(*)::int as n from queue.messages`),
    3 * orders,
  );

  // Each receiver's inbox: exactly its deliveries' messages, each once,
  // each applied (200), nothing refused.
  for (const subscriber of SUBSCRIBERS) {
    const inbox = sql(`${subscriber}.inbox`);
    const owed = deliveries.filter((d) => d.subscriber === subscriber)
      .reduce((n, d) => n + d.n, 0);
    const [row] = await sql<
      { rows: number; ids: number; applied: number; unmatched: number }[]
    >`select count(*)::int as rows,
           count(distinct message_id)::int as ids,
           count(*) filter (where status = 200)::int as applied,
           (select count(*) from queue.deliveries d
             where d.subscriber = ${subscriber}
               and not exists (select from ${inbox} i
                                where i.message_id = d.message_id))::int
             as unmatched
      from ${inbox}`;
    assert.deepEqual(
      { subscriber, ...row },
      { subscriber, rows: owed, ids: owed, applied: owed, unmatched: 0 },
    );
    assert.equal(
      await countOf(
        sql`select count(*)::int as n from ${sql(`${subscriber}.refusals`)}`,
      ),
      0,
      `${subscriber} refused nothing`,
    );
  }

  // Doubled 0: every effect once per order.
  const effects = await sql<Record<string, number>[]>`
  select
    (select count(*) from orders.orders where state = 'paid')::int
      as "paidOrders",
    (select count(*) from orders.events where type = 'OrderPaid')::int
      as "orderPaidEvents",
    (select count(distinct order_id) from orders.events
      where type = 'OrderPaid')::int as "ordersWithOrderPaid",
    (select count(*) from billing.payments where state = 'succeeded')::int
      as "payments",
    (select count(*) from kitchen.cards where state = 'confirmed')::int
      as "confirmedCards",
    (select count(*) from kitchen.cards)::int as "cards",
    (select count(*) from schedule.bookings where state = 'reserved')::int
      as "reservedBookings",
    (select count(*) from dispatch.stops where state = 'confirmed')::int
      as "stops",
    (select count(*) from crm.interactions)::int as "crmInteractions",
    (select count(*) from customers.history)::int as "customerHistory",
    (select count(*) from receipts.receipts)::int as "receipts",
    (select count(distinct number) from receipts.receipts)::int
      as "receiptNumbers"`;
  assert.deepEqual({ ...effects[0] }, {
    paidOrders: orders,
    orderPaidEvents: orders,
    ordersWithOrderPaid: orders,
    payments: orders,
    confirmedCards: orders,
    cards: orders,
    // Two products per order, each its own booking.
    reservedBookings: 2 * orders,
    stops: orders,
    crmInteractions: orders,
    customerHistory: 2 * orders,
    receipts: orders,
    receiptNumbers: orders,
  });
}

/** Each client's sandbox: everything closed, nothing owed. */
export async function assertClosuresClean(
  clients: Client[],
  perClient: number,
) {
  // The closure of every sandbox: everything closed, nothing owed.
  for (const [i, client] of clients.entries()) {
    const { status, body } = await client.json<
      { totals: Record<string, number> }
    >("GET", "/api/console/closure");
    assert.equal(status, 200);
    assert.deepEqual(body.totals, {
      owed: 0,
      inFlight: 0,
      acceptedUnacked: 0,
      closed: perClient * PER_ORDER,
      dead: 0,
      refused: 0,
      mismatch: 0,
    }, `closure of sandbox ${i + 1}`);
  }
}
