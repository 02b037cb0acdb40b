/**
 * The How it's built page and its twins: what a paid order costs, counted
 * from the rows of a known number of paid orders; a second sandbox sees none
 * of it; the Try-it checklist after each step of the walkthrough; the
 * repeats an inbox answered; the page without a session.
 */
import assert from "node:assert/strict";
import {
  type Client,
  countOf,
  deadLettersSettle,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";
import type { Costs } from "../services/how/costs.ts";
import type { HowItWorks } from "../services/how/page.ts";
import type { TryIt } from "../services/how/try_it.ts";
import { RECEIVERS, SENDERS } from "../services/routing.ts";
import { inEveryQueue } from "./_console_ops.ts";

async function get<T>(client: Client, path: string): Promise<T> {
  const { status, body } = await client.json<T>("GET", path);
  assert.equal(status, 200, `${path}: ${JSON.stringify(body)}`);
  return body;
}

const costsOf = (client: Client) =>
  get<Costs>(client, "/api/how-it-works/costs");

/** The steps ticked now, in order. */
async function ticked(client: Client): Promise<string[]> {
  const { steps } = await get<TryIt>(client, "/api/how-it-works/try-it");
  return steps.filter((s) => s.done).map((s) => s.step);
}

/** Waits until exactly `want` steps are ticked. */
async function tickedAre(client: Client, want: string[]) {
  let seen: string[] = [];
  try {
    await eventually(`ticks ${want.join(", ")}`, async () => {
      seen = await ticked(client);
      return JSON.stringify(seen) === JSON.stringify(want);
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}; ticked: ${seen.join(", ")}`);
  }
}

async function setFault(client: Client, name: string, on: boolean) {
  const { status } = await client.json("PUT", "/api/console/faults", {
    [name]: on,
  });
  assert.equal(status, 200);
}

async function redrive(client: Client, id: number) {
  const { status } = await client.json(
    "POST",
    `/api/console/dead-letters/${id}/redrive`,
  );
  assert.equal(status, 202);
}

Deno.test("what it costs: per paid order, counted from the rows of this sandbox only", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Costs");
    const paid: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { orderId } = await placeOrderVia(client, walkthroughOrder());
      // OrderPlaced delivered first, so that OrderPaid never meets a kitchen
      // without its card (a 409 and one attempt more).
      await orderSettles(client, orderId, "placed");
      await payVia(client, orderId);
      await orderSettles(client, orderId, "paid");
      paid.push(orderId);
    }
    // Placed, not paid: none of its rows count.
    const { orderId: unpaid } = await placeOrderVia(client, walkthroughOrder());
    await orderSettles(client, unpaid, "placed");

    const costs = await costsOf(client);
    assert.equal(costs.paidOrders, 2);
    const per = costs.perPaidOrder;
    // OrderPlaced, PaymentSucceeded and OrderPaid; 3 + 1 + 6 deliveries,
    // each applied at its first attempt.
    assert.equal(per.messages, 3);
    assert.equal(per.deliveries, 3 + 1 + RECEIVERS.length);
    assert.equal(per.attempts, 3 + 1 + RECEIVERS.length);
    assert.deepEqual(per.rowsWritten, {
      // order, 2 lines, 2 events, its key, 2 outbox rows, 1 inbox row
      orders: 9,
      // payment, Stripe event, outbox row
      billing: 3,
      // card + 2 inbox rows
      kitchen: 3,
      // 2 bookings (one per product) + 2 inbox rows
      schedule: 4,
      // the stop of a delivery order + 1 inbox row
      dispatch: 2,
      crm: 2,
      // 2 history rows + 2 inbox rows
      customers: 4,
      receipts: 2,
      // 3 messages, 10 deliveries; a first-try success writes no
      // attempt row
      queue: 13,
    });

    // The bytes, counted here straight from the tables: each sender's
    // outbox in its database, and every queue (each sender's in split mode).
    let outbox = 0;
    for (const service of SENDERS) {
      const sql = t.at(service);
      const [row] = await sql<{ b: number }[]>`
        select coalesce(sum(pg_column_size(o.*)), 0) as b
          from ${sql(`${service}.outbox`)} o
         where envelope ->> 'aggregateId' = any(${paid}::text[])`;
      outbox += Number(row.b);
    }
    assert.equal(per.bytes.outbox, Math.round(outbox / 2 * 100) / 100);
    const queues = await inEveryQueue(t.sql, (sql) =>
      sql<{ b: number }[]>`
        with d as (select * from queue.deliveries where aggregate_id = any(${paid}))
        select (select sum(pg_column_size(m.*)) from queue.messages m
                 where aggregate_id = any(${paid}))
             + (select sum(pg_column_size(d.*)) from d)
             + (select coalesce(sum(pg_column_size(a.*)), 0) from queue.attempts a
                 where delivery_id in (select id from d)) as b`);
    const queue = queues.reduce((sum, q) => sum + Number(q.b), 0);
    assert.equal(per.bytes.queue, Math.round(queue / 2 * 100) / 100);
    assert.ok(per.bytes.inbox! > 0);

    // Webhook to all six, p50 <= p95, both measured.
    assert.ok(costs.latencyMs.p50 !== null && costs.latencyMs.p50 >= 0);
    assert.ok(costs.latencyMs.p95! >= costs.latencyMs.p50!);
    // The slowest: from the webhook's Stripe event to the last of the six
    // inboxes, for each OrderPaid; read in each database, joined here.
    const paidMessages = await t.at("orders")<
      { message_id: string; order_id: string }[]
    >`
      select message_id, aggregate_id as order_id from queue.messages
       where source = 'orders' and type = 'OrderPaid'
         and tenant_id = ${sandboxId}`;
    const ids = paidMessages.map((m) => m.message_id);
    const lastReceived = new Map<string, number>();
    for (const receiver of RECEIVERS) {
      const sql = t.at(receiver);
      const rows = await sql<{ message_id: string; ms: number }[]>`
        select message_id,
               (extract(epoch from received_at) * 1000)::float8 as ms
          from ${sql(`${receiver}.inbox`)}
         where message_id = any(${ids}::uuid[])`;
      for (const { message_id, ms } of rows) {
        lastReceived.set(
          message_id,
          Math.max(ms, lastReceived.get(message_id) ?? -Infinity),
        );
      }
    }
    const events = await t.at("billing")<{ order_id: string; ms: number }[]>`
      select order_id::text as order_id,
             (extract(epoch from received_at) * 1000)::float8 as ms
        from billing.stripe_events
       where order_id::text = any(${paidMessages.map((m) => m.order_id)})`;
    const waits = paidMessages.flatMap((m) =>
      lastReceived.has(m.message_id)
        ? events.filter((e) => e.order_id === m.order_id)
          .map((e) => lastReceived.get(m.message_id)! - e.ms)
        : []
    );
    assert.ok(waits.length > 0);
    const worst = Math.max(...waits);
    assert.ok(costs.latencyMs.p95! <= Math.round(worst * 10) / 10 + 0.1);

    // The page's twin carries the same figures, and the page shows them.
    const page = await get<HowItWorks>(client, "/api/how-it-works");
    assert.deepEqual(page.sandbox!.costs, costs);
    const html = await (await client.fetch("/how-it-works")).text();
    assert.match(html, /Measured over the 2 paid orders of your sandbox/);

    // Another sandbox sees none of it.
    const other = t.client();
    await signIn(other, "Other");
    const none = await costsOf(other);
    assert.equal(none.paidOrders, 0);
    assert.equal(none.perPaidOrder.messages, null);
    assert.equal(none.perPaidOrder.rowsWritten.orders, null);
    assert.deepEqual(none.latencyMs, { p50: null, p95: null });
    const otherPage = await get<HowItWorks>(other, "/api/how-it-works");
    assert.equal(otherPage.sandbox!.lastOrder, null);
    assert.equal(
      otherPage.sandbox!.inboxes.reduce((n, i) => n + i.messages, 0),
      0,
    );
    assert.deepEqual(await ticked(other), ["signedIn"]);
  });
});

Deno.test("the page without a session: routing and settings, no sandbox; the sandbox's twins answer 401", async () => {
  await withTestBakery(async (t) => {
    const anyone = t.client();
    const page = await get<HowItWorks>(anyone, "/api/how-it-works");
    assert.equal(page.sandbox, null);
    assert.deepEqual(page.paidReceivers.map((r) => r.name), [...RECEIVERS]);
    assert.deepEqual(page.settings.retryDelaysMs, [100, 200, 300]);
    for (
      const path of ["/api/how-it-works/costs", "/api/how-it-works/try-it"]
    ) {
      const { status } = await anyone.json("GET", path);
      assert.equal(status, 401, path);
    }
    const response = await anyone.fetch("/how-it-works");
    assert.equal(response.status, 200);
    const html = await response.text();
    for (
      const title of [
        "A paid order, and who has to hear",
        "The two steps and the gap",
        "What happens to a row the queue refused",
        "At least once, applied once",
        "Where the retries stop",
        "What it costs",
        "Try it",
      ]
    ) assert.ok(html.includes(title), title);
    assert.match(html, /100 ms, 200 ms, 300 ms/);
    assert.match(html, /href="\/labs\/ledger"/);
    assert.match(html, /href="\/labs\/queue"/);
    // No visit leaves a sandbox behind.
    assert.equal(
      await countOf(t.sql`select count(*)::int as n from platform.tenants`),
      0,
    );
  });
});

Deno.test("applied once: repeats answered from the inbox are counted for this sandbox", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Twice");
    await setFault(client, "duplicateDeliveries", true);
    const { orderId } = await placeOrderVia(client, walkthroughOrder());
    await orderSettles(client, orderId, "placed");
    // OrderPlaced goes to three receivers, each posted twice: three repeats.
    let page: HowItWorks | undefined;
    await eventually("three repeats", async () => {
      page = await get<HowItWorks>(client, "/api/how-it-works");
      return page.sandbox!.repeatsTotal === 3;
    });
    const byReceiver = Object.fromEntries(
      page!.sandbox!.inboxes.map((i) => [i.receiver, i.repeats]),
    );
    assert.deepEqual(byReceiver, {
      kitchen: 1,
      schedule: 1,
      dispatch: 0,
      crm: 0,
      customers: 1,
      receipts: 0,
      orders: 0,
    });
    const [row] = await t.at("kitchen")<{ repeats: number }[]>`
      select repeats from kitchen.inbox`;
    assert.equal(row.repeats, 1);
    // The last order's message and its publish time (from the queue's
    // copy: the outbox row went when it was published).
    const last = page!.sandbox!.lastOrder!;
    assert.equal(last.orderId, orderId);
    assert.deepEqual(last.outbox.map((r) => [r.eventType, r.state]), [
      ["OrderPlaced", "published"],
    ]);
    assert.ok(last.outbox[0].publishedAt);

    const other = t.client();
    await signIn(other, "Other");
    const theirs = await get<HowItWorks>(other, "/api/how-it-works");
    assert.equal(theirs.sandbox!.repeatsTotal, 0);
  });
});

Deno.test("try it: the checklist after each step of the walkthrough, from the rows", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    // A guest has a sandbox, and an order, but has not signed in.
    const { orderId: early } = await placeOrderVia(client, walkthroughOrder());
    await orderSettles(client, early, "placed");
    await tickedAre(client, []);
    await signIn(client, "Walker");
    await tickedAre(client, ["signedIn"]);

    await setFault(client, "kitchenRefuses", true);
    await tickedAre(client, ["signedIn", "kitchenRefuses"]);

    const { orderId } = await placeOrderVia(client, walkthroughOrder());
    await payVia(client, orderId);
    await eventually(
      "ordered and paid",
      async () => (await ticked(client)).includes("orderedAndPaid"),
    );
    const dead = await deadLettersSettle(client, 2);
    const placed = dead.find((d) => d.eventType === "OrderPlaced")!;
    const paid = dead.find((d) => d.eventType === "OrderPaid")!;
    const four = [
      "signedIn",
      "kitchenRefuses",
      "orderedAndPaid",
      "kitchenDead503",
    ];
    await tickedAre(client, four);
    const { orderId: walkOrder } = await get<TryIt>(
      client,
      "/api/how-it-works/try-it",
    );
    assert.equal(walkOrder, orderId);

    await setFault(client, "kitchenRefuses", false);
    await tickedAre(client, [...four, "faultOff"]);

    // The wrong one first: OrderPaid before the card exists, 409.
    await redrive(client, paid.id);
    await deadLettersSettle(client, 2);
    await tickedAre(client, [...four, "faultOff", "paidFirst409"]);

    // Then in order: OrderPlaced, then OrderPaid.
    await redrive(client, placed.id);
    await deadLettersSettle(client, 1);
    await tickedAre(client, [...four, "faultOff", "paidFirst409"]);
    await redrive(client, paid.id);
    await deadLettersSettle(client, 0);
    await orderSettles(client, orderId, "paid");
    await tickedAre(client, [
      ...four,
      "faultOff",
      "paidFirst409",
      "redrivenInOrder",
      "oneConfirmedCard",
      "nothingOwed",
    ]);

    // Switching the fault on again unticks "fault off", from the rows.
    await setFault(client, "kitchenRefuses", true);
    const now = await ticked(client);
    assert.ok(!now.includes("faultOff"), now.join(", "));

    // Another sandbox has none of these ticks.
    const other = t.client();
    await signIn(other, "Other");
    assert.deepEqual(await ticked(other), ["signedIn"]);
  });
});

Deno.test("a row the queue refused: today's re-arms of this sandbox and its waiting row, from the guard's rows", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Refused");
    await setFault(client, "queueRefusesSends", true);
    const { orderId } = await placeOrderVia(client, walkthroughOrder());
    let page: HowItWorks | undefined;
    await eventually("two re-arms", async () => {
      page = await get<HowItWorks>(client, "/api/how-it-works");
      return page.sandbox!.loopGuard.rearmsToday.orders >= 2;
    }).catch(async (error) => {
      // Say where the row went: published past the switch, or never tried.
      const orders = t.at("orders");
      console.log(JSON.stringify({
        outbox: await orders`select id, state, attempts, next_attempt_at,
          now() as now, last_error, lease_owner from orders.outbox`,
        guard: await orders`select * from orders.relay_guard`,
        published: await orders`select count(*)::int from queue.messages`,
        log: t.lines.slice(-40),
      }));
      throw error;
    });
    const [guard] = await t.at("orders")<{ rearms: number }[]>`
      select rearms from orders.relay_guard`;
    const shown = page!.sandbox!.loopGuard;
    assert.ok(shown.rearmsToday.orders <= guard.rearms);
    assert.equal(shown.rearmsToday.billing, 0);
    assert.equal(shown.parked, 0);
    // The order's row waits in the outbox, unpublished.
    const last = page!.sandbox!.lastOrder!;
    assert.equal(last.orderId, orderId);
    assert.equal(last.outbox[0].publishedAt, null);
    assert.notEqual(last.outbox[0].state, "published");
    assert.equal(page!.settings.guardLimitPerDay, 100);

    const other = t.client();
    await signIn(other, "Other");
    const theirs = await get<HowItWorks>(other, "/api/how-it-works");
    assert.deepEqual(theirs.sandbox!.loopGuard, {
      rearmsToday: { orders: 0, billing: 0 },
      total: 0,
      parked: 0,
      retrying: 0,
    });

    // Once the queue takes sends again, the row is published.
    await setFault(client, "queueRefusesSends", false);
    await orderSettles(client, orderId, "placed");
  });
});
