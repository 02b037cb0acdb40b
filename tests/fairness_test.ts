/**
 * One sandbox cannot slow down another. Sandbox A builds a backlog (a slow
 * kitchen with every delivery sent twice; a bulk redrive of slow dead
 * letters; a plain flood of orders); sandbox B, with no fault of its own,
 * then orders and pays. B's OrderPaid must reach its six receivers while A's
 * backlog is still there, and before one slow delivery could have held a
 * consumer (4 s; the bench's target is 2 s): consumers claim
 * round-robin across sandboxes, hold at most a few of one sandbox's
 * deliveries at once, and a slow delivery does not hold a consumer.
 *
 * Over either transport: under TEST_QUEUE=jetstream the bakery runs over
 * JetStream, whose consumers take each sandbox's messages from a lane of
 * its own, round-robin and within the same share
 * (lib/carriers/jetstream/consumer.ts).
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { ROUTING } from "../services/routing.ts";
import {
  type Client,
  countOf,
  deadLettersSettle,
  eventually,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue, inEveryQueue } from "./_console_ops.ts";

const fairTest = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, fn });

/**
 * From B's payment to six applied: less than one of A's slow deliveries
 * holds a consumer (the slow kitchen takes 6 s, timed out at 5 s), so B
 * waited behind none of them. The 2 s target itself is the fairness
 * scenario's, in `deno task bench`; this bound leaves a loaded machine
 * room (2.6 s was seen with two test files at once, split over JetStream).
 */
const BOUND_MS = 4_000;

/**
 * Production-like delivery settings (a slow kitchen holds for 6 s), and no
 * rate limits: sandbox A is a load.
 */
const SETTINGS = {
  DELIVERY_TIMEOUT_MS: "5000",
  RETRY_DELAYS_MS: "1000,5000,25000",
  RATE_LIMIT_PER_MINUTE: "0",
};

const today = (plus: number) =>
  new Date(Date.now() + plus * 86_400_000).toISOString().slice(0, 10);

/** A small order (one bun) on one of several days, so capacity holds. */
function smallOrder(i: number) {
  return {
    items: [{ sku: "cardamom-bun", qty: 1 }],
    customer: { name: "Sandbox A", email: "a@example.com" },
    fulfilment: "delivery",
    day: today(1 + (i % 50)),
    idempotencyKey: crypto.randomUUID(),
  };
}

/** Places and pays `n` orders in A's sandbox, a few at a time. */
async function paidOrders(client: Client, n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, async (_, j) => {
        const { orderId } = await placeOrderVia(client, smallOrder(i + j));
        await payVia(client, orderId);
        ids.push(orderId);
      }),
    );
  }
  return ids;
}

/** Open deliveries (pending or in flight) of a sandbox, in every queue. */
function openDeliveries(sql: Sql, sandboxId: string) {
  return countInEveryQueue(sql, (sql) =>
    sql<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries
       where tenant_id = ${sandboxId} and state in ('pending', 'in_flight')`);
}

/**
 * Receivers whose inbox holds the OrderPaid of `orderId`; `at` gives the
 * pool of a service's database.
 */
async function paidReceivers(
  at: TestBakery["at"],
  orderId: string,
): Promise<string[]> {
  const [message] = await at("orders")<{ message_id: string }[]>`
    select message_id from orders.events
     where order_id = ${orderId} and type = 'OrderPaid'`;
  if (!message) return [];
  const reached: string[] = [];
  for (const receiver of ROUTING.OrderPaid) {
    const sql = at(receiver);
    const n = await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(`${receiver}.inbox`)}
       where message_id = ${message.message_id}`);
    if (n > 0) reached.push(receiver);
  }
  return reached;
}

/**
 * B orders and pays; returns the milliseconds from its payment to its
 * OrderPaid applied by all six receivers, and A's open deliveries then.
 */
async function quietOrder(t: TestBakery, sandboxA: string) {
  const b = t.client();
  await signIn(b, "Sandbox B");
  const { orderId } = await placeOrderVia(b, smallOrder(0));
  const paidAt = performance.now();
  await payVia(b, orderId);
  await eventually(
    "B's OrderPaid at all six receivers",
    async () =>
      (await paidReceivers(t.at, orderId)).length === ROUTING.OrderPaid.length,
    60_000,
  );
  const ms = performance.now() - paidAt;
  console.log(`B's paid order reached six receivers in ${Math.round(ms)} ms`);
  return { ms, backlogOfA: await openDeliveries(t.sql, sandboxA) };
}

/** B's paid order is prompt, while A's backlog is still there. */
async function quietOrderIsPrompt(t: TestBakery, sandboxA: string) {
  const { ms, backlogOfA } = await quietOrder(t, sandboxA);
  assert.ok(backlogOfA > 0, "A's backlog had drained: the test proves nothing");
  assert.ok(ms <= BOUND_MS, `B's paid order took ${Math.round(ms)} ms`);
}

fairTest(
  "a slow, doubled backlog in one sandbox does not hold up another's paid order",
  async () => {
    await withTestBakery(async (t) => {
      const a = t.client();
      const { sandboxId } = await signIn(a, "Sandbox A");
      await setFaults(a, { kitchenSlow: true, duplicateDeliveries: true });
      await paidOrders(a, 30);
      // A's backlog is there: its kitchen deliveries wait on a slow kitchen.
      await eventually(
        "A's orders to be published",
        async () =>
          await countOf(t.at("orders")<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries
         where tenant_id = ${sandboxId} and type = 'OrderPaid'`) >= 30 * 6,
        30_000,
      );
      await quietOrderIsPrompt(t, sandboxId);
    }, SETTINGS);
  },
);

fairTest(
  "a bulk redrive in one sandbox does not hold up another's paid order",
  async () => {
    await withTestBakery(async (t) => {
      const a = t.client();
      const { sandboxId } = await signIn(a, "Sandbox A");
      await setFaults(a, { kitchenRefuses: true });
      await paidOrders(a, 30);
      // 60 kitchen dead letters (OrderPlaced and OrderPaid of each order).
      await deadLettersSettle(a, 60, "", 60_000);
      await setFaults(a, { kitchenRefuses: false, kitchenSlow: true });
      const { status, body } = await a.json(
        "POST",
        "/api/console/dead-letters/redrive",
        { subscriber: "kitchen" },
      );
      assert.equal(status, 202, JSON.stringify(body));
      await quietOrderIsPrompt(t, sandboxId);
    }, { ...SETTINGS, RETRY_DELAYS_MS: "50,50,50" });
  },
);

fairTest(
  "a plain backlog of many orders in one sandbox does not hold up another's paid order",
  async () => {
    await withTestBakery(async (t) => {
      const a = t.client();
      const { sandboxId } = await signIn(a, "Sandbox A");
      // The queue refuses A's sends while its orders pile up in the outbox;
      // switched off, they all reach the queue at once.
      await setFaults(a, { queueRefusesSends: true });
      await paidOrders(a, 600);
      await setFaults(a, { queueRefusesSends: false });
      await eventually(
        "A's backlog in the queue",
        async () => await openDeliveries(t.sql, sandboxId) >= 1200,
        30_000,
      );
      await quietOrderIsPrompt(t, sandboxId);
    }, SETTINGS);
  },
);

// Fails without the handoff keeping the share (lib/delivery/fair_share.ts): the
// relay handed the slow kitchen's deliveries over past its lane's cap until
// they filled the sandbox's whole share, and A's other receivers waited out
// the kitchen's 20 s timeout.
Deno.test({
  name:
    "a slow receiver in one sandbox does not hold up that sandbox's other receivers",
  fn: async () => {
    await withTestBakery(async (t) => {
      const a = t.client();
      const { sandboxId } = await signIn(a, "Sandbox A");
      await setFaults(a, { kitchenSlow: true });
      await paidOrders(a, 30);
      const paidAt = performance.now();
      const others = ROUTING.OrderPaid.filter((r) => r !== "kitchen");
      // OrderPaid is a message of orders: its deliveries are in its queue.
      const queue = t.at("orders");
      const done = () =>
        countOf(queue<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries
         where tenant_id = ${sandboxId} and type = 'OrderPaid'
           and subscriber = any(${others}) and state = 'done'`);
      // The kitchen takes 6 s a delivery and times out at 5 s: its own
      // deliveries wait for their retries, the other five receivers do not.
      try {
        await eventually(
          "A's OrderPaid at its five other receivers",
          async () => await done() === 30 * others.length,
          15_000,
        );
      } catch (e) {
        console.log(JSON.stringify(
          await inEveryQueue(
            t.sql,
            (sql) =>
              sql`select subscriber, type, state, lease_owner is not null as leased,
                             count(*)::int as n, max(attempts) as a,
                             min(last_error) as err
                        from queue.deliveries group by 1, 2, 3, 4 order by 1, 2, 3`,
          ),
        ));
        console.log(
          JSON.stringify(t.lines.filter((l) => l.level !== "info").slice(-20)),
        );
        throw e;
      }
      console.log(
        `A's other receivers done ${
          Math.round(performance.now() - paidAt)
        } ms after its last payment`,
      );
      const kitchenOpen = await countOf(queue<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries
       where tenant_id = ${sandboxId} and subscriber = 'kitchen'
         and state in ('pending', 'in_flight')`);
      assert.ok(
        kitchenOpen > 0,
        "the kitchen had caught up: the test proves nothing",
      );
      // A consumer that waited for a wake-up went on only at the next poll,
      // or when a kitchen delivery timed out and woke it: neither comes
      // within 15 s here (a poll of 60 s, a timeout of 20 s), so the bound
      // holds on a loaded machine and fails without the fix.
    }, {
      ...SETTINGS,
      POLL_INTERVAL_MS: "60000",
      DELIVERY_TIMEOUT_MS: "20000",
    });
  },
});
