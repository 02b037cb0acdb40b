/**
 * The fault switches through the console API: every switch listed and off,
 * bad switches refused, and what the relay, consumers and receivers do while
 * a switch is on (the queue refuses sends, acknowledgements are lost,
 * deliveries are sent twice), and that everything closes once it is off.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { Dispatcher } from "../lib/delivery/mod.ts";
import { FAULT_NAMES } from "../services/faults.ts";
import { RECEIVERS } from "../services/routing.ts";
import {
  type Client,
  countOf,
  type DeliveryJson,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue } from "./_console_ops.ts";

interface OutboxJson {
  pending: number;
  ready: number;
  backingOff: number;
  oldestReadyAgeSeconds: number | null;
  oldestAgeSeconds: number | null;
  byService: { service: string; eventType: string; pending: number }[];
  oldest: {
    messageId: string;
    service: string;
    eventType: string;
    orderId: string;
    attempts: number;
    lastError: string | null;
  }[];
}

async function outbox(client: Client): Promise<OutboxJson> {
  const { status, body } = await client.json<OutboxJson>(
    "GET",
    "/api/console/outbox",
  );
  assert.equal(status, 200);
  return body;
}

async function closureTotals(client: Client) {
  const { status, body } = await client.json<
    { totals: Record<string, number> }
  >("GET", "/api/console/closure");
  assert.equal(status, 200);
  return body.totals;
}

/**
 * How many inbox rows each receiver holds for `messageId`; `at` gives the
 * pool of a receiver's database.
 */
async function inboxRows(
  at: (service: string) => Sql,
  messageId: string,
  receivers: string[],
) {
  const out: Record<string, number> = {};
  for (const r of receivers) {
    const sql = at(r);
    out[r] = await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(`${r}.inbox`)}
       where message_id = ${messageId}`);
  }
  return out;
}

const once = (names: readonly string[]) =>
  Object.fromEntries(names.map((n) => [n, 1]));

Deno.test("faults: every switch is listed and off; unknown names and non-booleans are a 400", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Fault operator");
    const { status, body } = await client.json<Record<string, boolean>>(
      "GET",
      "/api/console/faults",
    );
    assert.equal(status, 200);
    assert.deepEqual(
      body,
      Object.fromEntries(FAULT_NAMES.map((n) => [n, false])),
    );
    assert.ok(FAULT_NAMES.includes("kitchenRefuses"));

    const bad: [unknown, string][] = [
      [{ ovenOnFire: true }, "ovenOnFire"],
      [{ kitchenRefuses: true, ovenOnFire: true }, "ovenOnFire"],
      [{ kitchenRefuses: "yes" }, "kitchenRefuses"],
      [{ kitchenRefuses: 1 }, "kitchenRefuses"],
      [{ kitchenRefuses: null }, "kitchenRefuses"],
    ];
    for (const [input, name] of bad) {
      const answer = await client.json<
        { error: string; issues: { path: string }[] }
      >("PUT", "/api/console/faults", input);
      assert.equal(answer.status, 400, JSON.stringify(input));
      assert.ok(
        answer.body.issues.some((i) => i.path === name),
        JSON.stringify(answer.body),
      );
      assert.match(answer.body.error, new RegExp(name));
    }
    for (const input of [[], "kitchenRefuses", null]) {
      const answer = await client.json("PUT", "/api/console/faults", input);
      assert.equal(answer.status, 400, JSON.stringify(input));
    }
    // Nothing was switched on by the refused requests.
    const after = await client.json<Record<string, boolean>>(
      "GET",
      "/api/console/faults",
    );
    assert.deepEqual(after.body, body);
    const [rows] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from platform.faults`;
    assert.equal(rows.n, 0);

    // A valid change answers with every switch.
    const set = await setFaults(client, { kitchenRefuses: true });
    assert.deepEqual(
      set,
      Object.fromEntries(
        FAULT_NAMES.map((n) => [n, n === "kitchenRefuses"]),
      ),
    );
    // Each flip is in the operator log, with who flipped it; setting a
    // switch to what it is already flips nothing.
    await setFaults(client, { kitchenRefuses: true, kitchenSlow: false });
    await setFaults(client, { kitchenRefuses: false });
    const log = await client.json<{
      items: { action: string; actor: string; target: unknown }[];
    }>("GET", "/api/console/actions");
    assert.deepEqual(
      log.body.items.filter((i) => i.action === "fault").map((i) => [
        i.actor,
        i.target,
      ]),
      [
        ["Fault operator", { fault: "kitchenRefuses", enabled: false }],
        ["Fault operator", { fault: "kitchenRefuses", enabled: true }],
      ],
    );
  });
});

Deno.test("faults: while the queue refuses sends, OrderPlaced waits in the outbox and ages; then it drains", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Fault operator");
    await setFaults(client, { queueRefusesSends: true });
    const { orderId } = await placeOrderVia(client);

    // After the first failed publish the row backs off with its error.
    let first: OutboxJson | undefined;
    await eventually("a failed publish backing off", async () => {
      first = await outbox(client);
      return first.pending >= 1 && first.backingOff >= 1 &&
        first.oldest[0]?.attempts >= 1;
    }).catch(async (error) => {
      // This wait has failed in full runs only, never alone: say whether the
      // message went out anyway, and what the bakery logged.
      const published = await countOf(t.at("orders")<{ n: number }[]>`
        select count(*)::int as n from queue.messages`);
      console.log(JSON.stringify({
        outbox: first,
        published,
        log: t.lines.slice(-40),
      }));
      throw error;
    });
    const o = first!;
    assert.equal(o.pending, 1);
    assert.deepEqual(
      [o.oldest[0].service, o.oldest[0].eventType, o.oldest[0].orderId],
      ["orders", "OrderPlaced", orderId],
    );
    assert.match(o.oldest[0].lastError ?? "", /queue refused the send/);
    assert.ok(o.oldestAgeSeconds !== null && o.oldestAgeSeconds >= 0);
    assert.ok(
      o.oldestReadyAgeSeconds === null ||
        o.oldestReadyAgeSeconds < o.oldestAgeSeconds!,
      JSON.stringify(o),
    );
    assert.deepEqual(
      o.byService.map((s) => [s.service, s.eventType, s.pending]),
      [["orders", "OrderPlaced", 1]],
    );

    // Nothing reached the queue; the closure says the three are owed.
    assert.equal(
      await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.deliveries`,
      ),
      0,
    );
    const owed = await closureTotals(client);
    assert.equal(owed.owed, 3);
    assert.equal(owed.closed, 0);

    // The age grows while it waits, and the publish keeps failing.
    let later: OutboxJson | undefined;
    await eventually("the oldest age to grow", async () => {
      later = await outbox(client);
      return later.oldestAgeSeconds! > o.oldestAgeSeconds! &&
        later.oldest[0].attempts > o.oldest[0].attempts;
    });
    assert.equal(later!.pending, 1);
    assert.equal(later!.oldest[0].messageId, o.oldest[0].messageId);

    // Off: the outbox drains and the order reaches its receivers.
    await setFaults(client, { queueRefusesSends: false });
    await eventually("the outbox to drain", async () => {
      const now = await outbox(client);
      return now.pending === 0 && now.oldestAgeSeconds === null;
    });
    await orderSettles(client, orderId, "placed", 5_000);
    const totals = await closureTotals(client);
    assert.deepEqual([totals.owed, totals.closed, totals.mismatch], [0, 3, 0]);
    // Published in the end: the queue holds it, the outbox no longer.
    const messageId = o.oldest[0].messageId;
    const orders = t.at("orders");
    assert.equal(
      (await orders`select from orders.outbox where message_id = ${messageId}`)
        .length,
      0,
    );
    assert.equal(
      (await orders`select from queue.messages where message_id = ${messageId}`)
        .length,
      1,
    );
  });
});

Deno.test("faults: lost acknowledgements leave accepted but unacknowledged deliveries; off, they close with one effect", async () => {
  // Slow retries, so that the lost-ack state lasts long enough to be seen.
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Fault operator");
    await setFaults(client, { lostAcks: true });
    const { orderId } = await placeOrderVia(client);

    // Each of the three receivers applied OrderPlaced, and each ack was lost:
    // the deliveries wait for a retry.
    let unacked: DeliveryJson[] = [];
    await eventually("three lost acknowledgements", async () => {
      const { body } = await client.json<{ items: DeliveryJson[] }>(
        "GET",
        `/api/console/deliveries?orderId=${orderId}`,
      );
      unacked = body.items;
      return unacked.length === 3 &&
        unacked.every((d) =>
          d.attempts >= 1 && /acknowledgement lost/.test(d.lastError ?? "")
        );
    }, 5_000);
    const placedId = unacked[0].messageId;
    const receivers = ["kitchen", "schedule", "customers"];
    assert.deepEqual(unacked.map((d) => d.subscriber).sort(), receivers.sort());
    assert.ok(unacked.every((d) => d.state !== "done" && d.state !== "dead"));
    // The receivers have it although no delivery is done.
    assert.deepEqual(
      await inboxRows(t.at, placedId, receivers),
      once(receivers),
    );
    const during = await closureTotals(client);
    assert.deepEqual(
      [during.acceptedUnacked, during.closed, during.inFlight],
      [3, 0, 0],
    );

    await setFaults(client, { lostAcks: false });
    await orderSettles(client, orderId, "placed", 10_000);
    const totals = await closureTotals(client);
    assert.deepEqual(
      [
        totals.closed,
        totals.acceptedUnacked,
        totals.inFlight,
        totals.dead,
        totals.mismatch,
      ],
      [3, 0, 0, 0, 0],
    );

    // One effect each, although each was delivered at least twice.
    assert.deepEqual(
      await inboxRows(t.at, placedId, receivers),
      once(receivers),
    );
    const deliveries = await t.at("orders")<
      { subscriber: string; attempts: number }[]
    >`
      select subscriber, attempts from queue.deliveries where message_id = ${placedId}`;
    assert.equal(deliveries.length, 3);
    for (const d of deliveries) {
      assert.ok(d.attempts >= 2, `${d.subscriber}: ${d.attempts} attempts`);
    }
    assert.equal(
      await countOf(t.at("kitchen")<{ n: number }[]>`
        select count(*)::int as n from kitchen.cards where order_id = ${orderId}`),
      1,
    );
    assert.equal(
      await countOf(t.at("customers")<{ n: number }[]>`
        select count(*)::int as n from customers.history where order_id = ${orderId}`),
      1,
    );
    const bookings = await t.at("schedule")<{ sku: string; qty: number }[]>`
      select sku, qty from schedule.bookings where order_id = ${orderId} order by sku`;
    assert.deepEqual(bookings.map((b) => [b.sku, b.qty]), [
      ["cardamom-bun", 2],
      ["country-loaf", 1],
    ]);
  }, { RETRY_DELAYS_MS: "1500,1500,1500" });
});

Deno.test("faults: with every delivery sent twice, every receiver still applies each message once", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Fault operator");
    await setFaults(client, { duplicateDeliveries: true });
    // Counts the posts of each message to receivers (a spy: it changes
    // nothing), to show that the switch really sent each delivery twice,
    // alone or in a batch.
    const posts = new Map<string, number>();
    const send = Dispatcher.prototype.send;
    Dispatcher.prototype.send = async function (request: Request) {
      const path = new URL(request.url).pathname;
      const ids = path.endsWith("/batch")
        ? (await request.clone().json()).messages.map(
          (m: { messageId: string }) => m.messageId,
        )
        : [request.headers.get("x-message-id")];
      for (const id of ids) {
        const key = `${path.replace(/\/batch$/, "")} ${id}`;
        posts.set(key, (posts.get(key) ?? 0) + 1);
      }
      return await send.call(this, request);
    };
    let order;
    try {
      const { orderId } = await placeOrderVia(client);
      await payVia(client, orderId);
      order = await orderSettles(client, orderId, "paid", 5_000);
    } finally {
      Dispatcher.prototype.send = send;
    }
    const { orderId } = order;
    assert.equal(posts.size, order.deliveries.length);
    for (const d of order.deliveries) {
      assert.equal(
        posts.get(`/receivers/${d.subscriber} ${d.messageId}`),
        2,
        `${d.eventType} to ${d.subscriber}`,
      );
    }

    const placed = order.events.find((e) => e.type === "OrderPlaced")!;
    const paid = order.events.find((e) => e.type === "OrderPaid")!;
    assert.deepEqual(
      await inboxRows(t.at, placed.messageId, [
        "kitchen",
        "schedule",
        "customers",
      ]),
      once(["kitchen", "schedule", "customers"]),
    );
    assert.deepEqual(
      await inboxRows(t.at, paid.messageId, [...RECEIVERS]),
      once(RECEIVERS),
    );
    // One attempt each: the second post was answered like the first.
    assert.ok(
      order.deliveries.every((d) => d.attempts === 1),
      JSON.stringify(order.deliveries),
    );

    const board = await client.json<
      { cards: { orderId: string; state: string }[] }
    >("GET", "/api/kitchen/board");
    assert.deepEqual(
      board.body.cards.map((c) => [c.orderId, c.state]),
      [[orderId, "confirmed"]],
    );
    const count = (table: string) => {
      const sql = t.at(table.slice(0, table.indexOf(".")));
      return countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${
        sql(table)
      } where order_id = ${orderId}`);
    };
    assert.deepEqual(
      {
        cards: await count("kitchen.cards"),
        bookings: await count("schedule.bookings"),
        stops: await count("dispatch.stops"),
        interactions: await count("crm.interactions"),
        history: await count("customers.history"),
        receipts: await count("receipts.receipts"),
      },
      {
        cards: 1,
        bookings: 2,
        stops: 1,
        interactions: 1,
        history: 2,
        receipts: 1,
      },
    );
    const totals = await closureTotals(client);
    assert.deepEqual(
      [totals.closed, totals.mismatch, totals.acceptedUnacked, totals.dead],
      [10, 0, 0, 0],
    );
  });
});
