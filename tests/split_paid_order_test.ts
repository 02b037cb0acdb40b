/**
 * A paid order in split mode (services/databases.ts): the web app, billing,
 * orders and the six receivers each in a database of their own, a relay
 * and consumers per sender database, over HTTP as a visitor pays. Each
 * receiver applies OrderPaid once, in its own database, and nothing of the
 * path is written in a database that is not its service's.
 */
import assert from "node:assert/strict";
import { RECEIVERS } from "../services/routing.ts";
import { splitStream } from "../services/mod.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";
import { connect as connectNats } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  countOf,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";

Deno.test("split mode: a paid order is applied once by each receiver, in its own database", async () => {
  await paidOrderInSplitMode({ QUEUE: "postgres" });
});

natsTest(
  "split mode over JetStream: the same, on a stream per sender",
  async () => {
    const stream = testStream();
    await paidOrderInSplitMode({
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: stream,
    }, async () => {
      // Each sender's deliveries went through its own stream: orders'
      // nine (OrderPlaced to three, OrderPaid to six), billing's one.
      const nc = await connectNats({ servers: TEST_NATS_URL });
      try {
        const jsm = await jetstreamManager(nc);
        const held = async (sender: string) =>
          (await jsm.streams.info(splitStream(stream, sender))).state
            .messages;
        assert.deepEqual([await held("orders"), await held("billing")], [
          9,
          1,
        ]);
      } finally {
        await nc.close();
      }
    });
  },
);

async function paidOrderInSplitMode(
  transport: Record<string, string>,
  checkTransport: () => Promise<void> = async () => {},
) {
  // The bakery's own tests' start (tests/_app.ts) makes the databases,
  // named after the test's own, and drops them and the streams after.
  await withTestBakery(async (t) => {
    const databases = t.databases!;
    const client = t.client();
    const { sandboxId } = await signIn(client);
    const { orderId } = await placeOrderVia(client);
    const { paymentId } = await payVia(client, orderId);
    const db = (name: string) => databases.pools.get(name)!;

    await eventually("every receiver applied OrderPaid", async () => {
      for (const receiver of RECEIVERS) {
        const [row] = await db(receiver)<{ n: number }[]>`
            select count(*)::int as n from ${db(receiver)(`${receiver}.inbox`)}
             where type = 'OrderPaid'`;
        if (row.n !== 1) return false;
      }
      return true;
    }, 15_000);

    const orders = db("orders");
    // A receiver commits its inbox row before it answers, and the consumer
    // records the answer in the sender's queue after that: wait for it.
    const open = async (pool: typeof orders) =>
      await countOf(pool<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries
           where state <> 'done'`);
    await eventually(
      "the senders' queues recorded every answer",
      async () => await open(orders) === 0 && await open(db("billing")) === 0,
      15_000,
    );
    const [order] = await orders`
        select state, payment_ref from orders.orders where id = ${orderId}`;
    assert.deepEqual({ ...order }, { state: "paid", payment_ref: paymentId });
    // Billing's PaymentSucceeded went through billing's own queue to the
    // orders service's inbox.
    assert.equal(
      await countOf(orders<{ n: number }[]>`
          select count(*)::int as n from orders.inbox
           where type = 'PaymentSucceeded'`),
      1,
    );
    assert.equal(
      await countOf(db("billing")<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries
           where subscriber = 'orders' and state = 'done'`),
      1,
    );
    // The orders service's messages were delivered from its own queue:
    // OrderPlaced to three receivers and OrderPaid to six.
    const states = await orders<{ type: string; state: string; n: number }[]>`
        select type, state, count(*)::int as n from queue.deliveries
         group by 1, 2 order by 1, 2`;
    assert.deepEqual(states.map((r) => ({ ...r })), [
      { type: "OrderPaid", state: "done", n: 6 },
      { type: "OrderPlaced", state: "done", n: 3 },
    ]);
    // Each effect is in its receiver's database.
    const [card] = await db("kitchen")`
        select state from kitchen.cards where order_id = ${orderId}`;
    assert.equal(card.state, "confirmed");
    assert.equal(
      await countOf(db("receipts")<{ n: number }[]>`
          select count(*)::int as n from receipts.receipts
           where order_id = ${orderId}`),
      1,
    );
    // The order's page reads each part where it is, and tells the same
    // story as with one database.
    const view = await orderSettles(client, orderId, "paid");
    await checkTransport();
    assert.deepEqual(
      view.messages.map((m) => [m.service, m.eventType, m.state]),
      [
        ["orders", "OrderPlaced", "published"],
        ["billing", "PaymentSucceeded", "published"],
        ["orders", "OrderPaid", "published"],
      ],
    );
    assert.equal(view.deliveries.length, 10);
    assert.deepEqual(view.kitchenCard, { state: "confirmed", version: 2 });
    // The console pages that read each service's database.
    for (
      const page of ["/console/outbox", "/console/kitchen", "/console/faults"]
    ) {
      const response = await client.fetch(page);
      await response.body?.cancel();
      assert.equal(response.status, 200, page);
    }
    const board = await client.json<{ cards: { orderId: string }[] }>(
      "GET",
      "/api/kitchen/board",
    );
    assert.deepEqual(board.body.cards.map((c) => c.orderId), [orderId]);
    const ages = await client.json<{ pending: number }>(
      "GET",
      "/api/console/outbox",
    );
    assert.equal(ages.body.pending, 0);
    // The closure joins each queue's deliveries to each receiver's
    // inbox, in the app: all ten obligations closed, none a mismatch.
    const closure = await client.json<
      { totals: Record<string, number> }
    >("GET", "/api/console/closure");
    assert.equal(
      closure.body.totals.closed,
      10,
      JSON.stringify(closure.body),
    );
    assert.equal(closure.body.totals.mismatch, 0);
    const cell = await client.json<{ items: { detail: string }[] }>(
      "GET",
      "/api/console/closure/rows?subscriber=kitchen&state=closed",
    );
    assert.equal(cell.body.items.length, 2);
    assert.ok(
      cell.body.items.every((i) => /inbox answered 200/.test(i.detail)),
    );
    const alerts = await client.json("GET", "/api/console/alerts");
    assert.deepEqual(alerts.body, { alerts: [] });
    // A fault switch and a pause reach every database that needs them:
    // each sender's, whose relay and consumers read them there.
    const fault = await client.json("PUT", "/api/console/faults", {
      queueRefusesSends: true,
    });
    assert.equal(fault.status, 200);
    const pause = await client.json("PUT", "/api/console/receivers/kitchen", {
      paused: true,
    });
    assert.equal(pause.status, 200);
    for (const name of ["orders", "billing"]) {
      const [row] = await db(name)<{ faults: number; pauses: number }[]>`
          select (select count(*)::int from platform.faults
                   where tenant_id = ${sandboxId} and enabled) as faults,
                 (select count(*)::int from queue.pauses
                   where tenant_id = ${sandboxId} and paused) as pauses`;
      assert.deepEqual({ ...row }, { faults: 1, pauses: 1 }, name);
    }
    const paused = await client.json<{ paused: boolean }>(
      "GET",
      "/api/console/receivers/kitchen",
    );
    assert.equal(paused.body.paused, true);
    // The seed's walk-through: the kitchen refuses, its deliveries of a
    // second order die, the operator redrives them from the console.
    await client.json("PUT", "/api/console/receivers/kitchen", {
      paused: false,
    });
    await client.json("PUT", "/api/console/faults", {
      queueRefusesSends: false,
      kitchenRefuses: true,
    });
    const second = await placeOrderVia(client);
    await payVia(client, second.orderId);
    type Dead = { id: number; eventType: string; subscriber: string };
    let dead: Dead[] = [];
    await eventually("the kitchen's two dead letters", async () => {
      dead = (await client.json<{ items: Dead[] }>(
        "GET",
        "/api/console/dead-letters",
      )).body.items;
      return dead.length === 2;
    }, 15_000);
    assert.deepEqual(
      dead.map((d) => [d.subscriber, d.eventType]).sort(),
      [["kitchen", "OrderPaid"], ["kitchen", "OrderPlaced"]],
    );
    const overview = await client.json<
      { deadLetters: { subscriber: string; count: number }[] }
    >("GET", "/api/console/overview");
    assert.deepEqual(
      overview.body.deadLetters.map((d) => [d.subscriber, d.count]),
      [["kitchen", 2]],
    );
    // /metrics adds up each queue's counts.
    const metrics = await (await client.fetch("/metrics")).text();
    assert.match(metrics, /^bakery_dead_letters\{subscriber="kitchen"\} 2$/m);
    assert.match(
      metrics,
      /^bakery_deliveries\{state="done",subscriber="orders"\} 2$/m,
    );
    const groups = await client.json<{ groups: { count: number }[] }>(
      "GET",
      "/api/console/failure-groups",
    );
    assert.equal(groups.body.groups.reduce((n, g) => n + g.count, 0), 2);
    for (
      const page of [
        "/console",
        "/console/dead-letters",
        "/console/receivers",
        "/console/order-violations",
      ]
    ) {
      const response = await client.fetch(page);
      await response.body?.cancel();
      assert.equal(response.status, 200, page);
    }
    const detail = await client.json<{ attempts: unknown[] }>(
      "GET",
      `/api/console/deliveries/${dead[0].id}`,
    );
    assert.equal(detail.status, 200);
    assert.equal(detail.body.attempts.length, 4);
    await client.json("PUT", "/api/console/faults", {
      kitchenRefuses: false,
    });
    const redrive = await client.json<{ count: number }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "kitchen" },
    );
    assert.deepEqual([redrive.status, redrive.body.count], [202, 2]);
    await eventually("the redriven card", async () => {
      const [card] = await db("kitchen")`
          select state from kitchen.cards where order_id = ${second.orderId}`;
      return card?.state === "confirmed";
    }, 15_000);
    const counts = await client.json<{ counts: Record<string, number> }>(
      "GET",
      "/api/console/deliveries",
    );
    assert.equal(counts.body.counts.dead, 0);
    // What does not read across databases yet says so, and fails nothing.
    // Search reads each service's database: an order by its short
    // number, a receipt by its number, a delivery by its id.
    type Found = { results: { kind: string; id: string }[] };
    const find = async (q: string) =>
      (await client.json<Found>(
        "GET",
        `/api/console/search?q=${encodeURIComponent(q)}`,
      )).body.results.map((r) => `${r.kind} ${r.id}`);
    assert.deepEqual(await find(orderId.slice(-6)), [`order ${orderId}`]);
    const [receipt] = await db("receipts")<{ number: string }[]>`
        select number from receipts.receipts where order_id = ${orderId}`;
    assert.deepEqual(await find(receipt.number), [`order ${orderId}`]);
    assert.deepEqual(await find(String(dead[0].id)), [
      `delivery ${dead[0].id}`,
    ]);
    // "How it's built" reads each part where it is: the visitor's costs,
    // and how far the walk-through went.
    const costs = await client.json<{ paidOrders: number }>(
      "GET",
      "/api/how-it-works/costs",
    );
    assert.equal(costs.body.paidOrders, 2);
    const tryIt = await client.json<
      { steps: { step: string; done: boolean }[] }
    >("GET", "/api/how-it-works/try-it");
    const done = tryIt.body.steps.filter((s) => s.done).map((s) => s.step);
    for (const step of ["signedIn", "orderedAndPaid", "kitchenDead503"]) {
      assert.ok(done.includes(step), `${step} in ${done}`);
    }
    const how = await client.fetch("/how-it-works");
    await how.body?.cancel();
    assert.equal(how.status, 200);
    // Supersede: a third order's OrderPlaced dies at the kitchen, and a
    // corrected copy of it goes in its place, from the same queue. Release
    // finds nothing parked in either sender's outbox.
    await client.json("PUT", "/api/console/faults", { kitchenRefuses: true });
    const third = await placeOrderVia(client);
    let placedDead: Dead | undefined;
    await eventually("the third order's OrderPlaced dead", async () => {
      placedDead = (await client.json<{ items: Dead[] }>(
        "GET",
        "/api/console/dead-letters",
      )).body.items.find((d) => d.eventType === "OrderPlaced");
      return placedDead !== undefined;
    }, 15_000);
    await client.json("PUT", "/api/console/faults", { kitchenRefuses: false });
    const original = await client.json<
      { envelope: { payload: Record<string, unknown> } }
    >("GET", `/api/console/deliveries/${placedDead!.id}`);
    const copy = await client.json<{ messageId: string }>(
      "POST",
      `/api/console/dead-letters/${placedDead!.id}/supersede`,
      { payload: original.body.envelope.payload, reason: "sent again as is" },
    );
    assert.ok(copy.status < 300, JSON.stringify(copy.body));
    await eventually("the copy applied by the kitchen", async () => {
      const [card] = await db("kitchen")`
        select placed_message_id from kitchen.cards
         where order_id = ${third.orderId}`;
      return card?.placed_message_id === copy.body.messageId;
    }, 15_000);
    const release = await client.json<{ count: number }>(
      "POST",
      "/api/console/outbox/release",
      {},
    );
    assert.deepEqual([release.status, release.body.count], [200, 0]);
    // The operator log, from each queue: the pause and the resume once
    // (they are read from the first queue alone), the redrive by
    // subscriber, the supersede and the release (once: it found nothing).
    type Entry = { action: string };
    const log = await client.json<{ items: Entry[]; next: string | null }>(
      "GET",
      "/api/console/actions?limit=3",
    );
    const rest = await client.json<{ items: Entry[] }>(
      "GET",
      `/api/console/actions?before=${encodeURIComponent(log.body.next!)}`,
    );
    assert.deepEqual(
      [...log.body.items, ...rest.body.items].map((e) => e.action)
        .filter((action) => action !== "fault"),
      ["release", "supersede", "redrive", "resume", "pause"],
    );
    // The console's database holds the visitor's session, and no
    // service's rows.
    const [session] = await databases.main<{ n: number }[]>`
        select count(*)::int as n from platform.sessions where ended_at is null`;
    assert.equal(session.n, 1);
  }, { ...transport, SERVICE_DATABASES: "split" });
}
