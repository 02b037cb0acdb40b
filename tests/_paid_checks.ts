/**
 * What a test that pays orders under faults checks at the end: every
 * delivery done once and applied once by its receiver (lost 0), every
 * effect once per order (doubled 0), and each sandbox's closure owing
 * nothing.
 */
import assert from "node:assert/strict";
import { until } from "./_main.ts";
import type { Sql } from "../lib/db/connect.ts";
import { poolOf } from "../lib/db/service.ts";
import { countInEveryQueue, inEveryQueue } from "./_console_ops.ts";
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

/** The messages of one paid order. */
const PAID_TYPES = ["OrderPlaced", "PaymentSucceeded", "OrderPaid"];

/** Deliveries one paid order makes: 3 OrderPlaced, 1 payment, 6 OrderPaid. */
export const PER_ORDER = PAID_TYPES.reduce(
  (n, type) => n + ROUTING[type].length,
  0,
);

/** How far the paid orders have got. */
export interface Progress {
  paid: number;
  unpublished: number;
  deliveries: number;
  done: number;
  dead: number;
}

export async function progress(sql: Sql): Promise<Progress> {
  const at = (service: string) => poolOf(sql, service);
  const states = await inEveryQueue(
    sql,
    (q) =>
      q<{ state: string; n: number }[]>`
      select state, count(*)::int as n from queue.deliveries group by 1`,
  );
  const inState = (state?: string) =>
    states.filter((r) => !state || r.state === state)
      .reduce((n, r) => n + r.n, 0);
  return {
    paid: await countOf(at("orders")`
      select count(*)::int as n from orders.orders where state = 'paid'`),
    unpublished: await countOf(at("orders")`
        select count(*)::int as n from orders.outbox`) +
      await countOf(at("billing")`
        select count(*)::int as n from billing.outbox`),
    deliveries: inState(),
    dead: inState("dead"),
    done: inState("done"),
  };
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

/**
 * Lost 0 and doubled 0 for `orders` paid orders, the only ones made. Each
 * table is read in its service's database, and every queue's rows are
 * added up, so that it holds in split mode too.
 */
export async function assertPaidOnce(sql: Sql, orders: number) {
  const at = (service: string) => poolOf(sql, service);
  // Lost 0: every delivery done, one per message and subscriber.
  const rows = await inEveryQueue(
    sql,
    (q) =>
      q<{
        subscriber: string;
        type: string;
        state: string;
        message_id: string;
      }[]>`
      select subscriber, type, state, message_id from queue.deliveries`,
  );
  const groups = new Map<string, number>();
  for (const r of rows) {
    const key = JSON.stringify([r.subscriber, r.type, r.state]);
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const deliveries = [...groups].map(([key, n]) => {
    const [subscriber, type, state] = JSON.parse(key);
    return { subscriber, type, state, n };
  }).sort((a, b) =>
    a.subscriber.localeCompare(b.subscriber) || a.type.localeCompare(b.type)
  );
  const expected = PAID_TYPES
    .flatMap((type) =>
      ROUTING[type].map((subscriber) => ({
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
  assert.deepEqual(deliveries, expected);
  assert.equal(
    await countInEveryQueue(
      sql,
      (q) => q`select count(*)::int as n from queue.messages`,
    ),
    3 * orders,
  );

  // Each receiver's inbox: exactly its deliveries' messages, each once,
  // each applied (200), nothing refused.
  for (const subscriber of SUBSCRIBERS) {
    const db = at(subscriber);
    const owed = rows.filter((d) => d.subscriber === subscriber);
    const inbox = await db<{ message_id: string; status: number }[]>`
      select message_id, status from ${db(`${subscriber}.inbox`)}`;
    const held = new Set(inbox.map((r) => r.message_id));
    const row = {
      rows: inbox.length,
      ids: held.size,
      applied: inbox.filter((r) => r.status === 200).length,
    };
    const unmatched = owed.filter((d) => !held.has(d.message_id)).length;
    assert.deepEqual(
      { subscriber, ...row, unmatched },
      {
        subscriber,
        rows: owed.length,
        ids: owed.length,
        applied: owed.length,
        unmatched: 0,
      },
    );
    assert.equal(
      await countOf(
        db`select count(*)::int as n from ${db(`${subscriber}.refusals`)}`,
      ),
      0,
      `${subscriber} refused nothing`,
    );
  }

  // Doubled 0: every effect once per order.
  const effects = {
    paidOrders: await countOf(at("orders")`
      select count(*)::int as n from orders.orders where state = 'paid'`),
    orderPaidEvents: await countOf(at("orders")`
      select count(*)::int as n from orders.events where type = 'OrderPaid'`),
    ordersWithOrderPaid: await countOf(at("orders")`
      select count(distinct order_id)::int as n from orders.events
       where type = 'OrderPaid'`),
    payments: await countOf(at("billing")`
      select count(*)::int as n from billing.payments
       where state = 'succeeded'`),
    confirmedCards: await countOf(at("kitchen")`
      select count(*)::int as n from kitchen.cards where state = 'confirmed'`),
    cards: await countOf(at("kitchen")`
      select count(*)::int as n from kitchen.cards`),
    reservedBookings: await countOf(at("schedule")`
      select count(*)::int as n from schedule.bookings
       where state = 'reserved'`),
    stops: await countOf(at("dispatch")`
      select count(*)::int as n from dispatch.stops where state = 'confirmed'`),
    crmInteractions: await countOf(at("crm")`
      select count(*)::int as n from crm.interactions`),
    customerHistory: await countOf(at("customers")`
      select count(*)::int as n from customers.history`),
    receipts: await countOf(at("receipts")`
      select count(*)::int as n from receipts.receipts`),
    receiptNumbers: await countOf(at("receipts")`
      select count(distinct number)::int as n from receipts.receipts`),
  };
  assert.deepEqual(effects, {
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
