/**
 * The console walkthrough through the JSON API: the kitchen refuses, a paid
 * order's kitchen messages die after their retries, the operator redrives
 * them (the wrong one first), and the closure ends with nothing open.
 */
import assert from "node:assert/strict";
import { RECEIVERS } from "../services/routing.ts";
import {
  type Client,
  deadLettersSettle,
  type DeliveryJson,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

interface DetailJson {
  delivery: DeliveryJson;
  attempts: {
    attempt: number;
    status: number | null;
    outcome: string;
    error: string | null;
  }[];
  actions: { action: string; actor: string; reason: string | null }[];
}

async function detail(client: Client, id: number): Promise<DetailJson> {
  const { status, body } = await client.json<DetailJson>(
    "GET",
    `/api/console/deliveries/${id}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

/** Waits until delivery `id` leaves pending and in flight; returns it. */
async function settled(client: Client, id: number): Promise<DetailJson> {
  let last: DetailJson | undefined;
  await eventually(`delivery ${id} to settle`, async () => {
    last = await detail(client, id);
    return !["pending", "in_flight"].includes(last.delivery.state);
  }, 5_000);
  return last!;
}

async function redrive(client: Client, id: number) {
  const { status, body } = await client.json<{ count: number; ids: number[] }>(
    "POST",
    `/api/console/dead-letters/${id}/redrive`,
  );
  assert.equal(status, 202, JSON.stringify(body));
  assert.deepEqual(body.ids, [id]);
}

Deno.test("console walkthrough: the kitchen refuses, the operator redrives, everything closes", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Morning shift");
    const on = await client.json<Record<string, boolean>>(
      "PUT",
      "/api/console/faults",
      { kitchenRefuses: true },
    );
    assert.equal(on.status, 200);
    assert.equal(on.body.kitchenRefuses, true);

    const { orderId } = await placeOrderVia(client, walkthroughOrder());
    await payVia(client, orderId);

    // The order is paid although the kitchen refuses.
    await eventually("the order to be paid", async () => {
      const { body } = await client.json<{ state: string }>(
        "GET",
        `/api/orders/${orderId}`,
      );
      return body.state === "paid";
    });

    // After the retries, both kitchen messages are dead letters.
    const dead = await deadLettersSettle(client, 2);
    assert.deepEqual(
      dead.map((d) => [d.subscriber, d.eventType, d.orderId]).sort(),
      [
        ["kitchen", "OrderPaid", orderId],
        ["kitchen", "OrderPlaced", orderId],
      ],
    );
    for (const d of dead) {
      assert.match(d.lastError ?? "", /^Kitchen answered 503: .+/);
      assert.equal(d.attempts, 4);
      assert.equal(d.lastStatus, 503);
    }
    const placed = dead.find((d) => d.eventType === "OrderPlaced")!;
    const paid = dead.find((d) => d.eventType === "OrderPaid")!;

    // Every other receiver has both of its messages.
    const { body: order } = await client.json<
      { deliveries: { subscriber: string; state: string }[] }
    >("GET", `/api/orders/${orderId}`);
    const others = order.deliveries.filter((d) => d.subscriber !== "kitchen");
    // OrderPlaced to schedule and customers, OrderPaid to the five other
    // receivers, PaymentSucceeded to orders.
    assert.equal(others.length, 2 + (RECEIVERS.length - 1) + 1);
    assert.ok(others.every((d) => d.state === "done"), JSON.stringify(others));

    const off = await client.json<Record<string, boolean>>(
      "PUT",
      "/api/console/faults",
      { kitchenRefuses: false },
    );
    assert.equal(off.status, 200);
    assert.equal(off.body.kitchenRefuses, false);

    // The wrong one first: OrderPaid before the card exists is "not yet",
    // and a redrive grants one attempt, so it is dead again.
    await redrive(client, paid.id);
    const early = await settled(client, paid.id);
    assert.equal(early.delivery.state, "dead");
    assert.equal(early.delivery.attempts, 5);
    assert.match(early.delivery.lastError ?? "", /409/);
    assert.match(
      early.delivery.lastError ?? "",
      new RegExp(`no card for order ${orderId}`),
    );
    assert.deepEqual(
      (await deadLettersSettle(client, 2)).map((d) => d.id).sort(),
      [placed.id, paid.id].sort(),
    );

    // In order: OrderPlaced, then OrderPaid.
    await redrive(client, placed.id);
    assert.equal((await settled(client, placed.id)).delivery.state, "done");
    await redrive(client, paid.id);
    assert.equal((await settled(client, paid.id)).delivery.state, "done");

    const board = await client.json<
      { cards: { orderId: string; state: string }[] }
    >("GET", "/api/kitchen/board");
    assert.equal(board.status, 200);
    assert.deepEqual(
      board.body.cards.filter((c) => c.orderId === orderId).map((c) => c.state),
      ["confirmed"],
    );
    assert.equal(board.body.cards.length, 1);

    await orderSettles(client, orderId, "paid", 5_000);
    const closure = await client.json<{
      totals: Record<string, number>;
      bySubscriber: Record<string, Record<string, number>>;
      retention: Record<string, unknown>;
    }>("GET", "/api/console/closure");
    assert.equal(closure.status, 200);
    // What is kept, and for how long: the horizon plus the margin.
    assert.deepEqual(closure.body.retention, {
      on: true,
      replayHorizonDays: 30,
      marginDays: 7,
      keptDays: 37,
    });
    const page = await client.fetch("/console/closure");
    assert.equal(page.status, 200);
    assert.match(await page.text(), /removed <strong>37 days<\/strong>/);
    const { totals, bySubscriber } = closure.body;
    assert.deepEqual(
      {
        owed: totals.owed,
        inFlight: totals.inFlight,
        acceptedUnacked: totals.acceptedUnacked,
        dead: totals.dead,
        refused: totals.refused,
        mismatch: totals.mismatch,
      },
      {
        owed: 0,
        inFlight: 0,
        acceptedUnacked: 0,
        dead: 0,
        refused: 0,
        mismatch: 0,
      },
    );
    assert.equal(bySubscriber.kitchen.closed, 2);
    // 3 OrderPlaced + 6 OrderPaid + 1 PaymentSucceeded to orders.
    assert.equal(totals.closed, 10);
    assert.deepEqual(await deadLettersSettle(client, 0), []);

    // The OrderPaid delivery's whole story: 4 attempts, 1 after the first
    // redrive, 1 after the second; two redrives by the signed-in operator.
    const story = await detail(client, paid.id);
    assert.deepEqual(
      story.attempts.map((a) => [a.attempt, a.status, a.outcome]),
      [
        [1, 503, "retry"],
        [2, 503, "retry"],
        [3, 503, "retry"],
        [4, 503, "dead"],
        [5, 409, "dead"],
        [6, 200, "done"],
      ],
    );
    assert.deepEqual(
      story.actions.map((a) => [a.action, a.actor]),
      [["redrive", "Morning shift"], ["redrive", "Morning shift"]],
    );
    assert.equal(story.delivery.redrives, 2);

    // The same, straight from the queue's tables: orders', since OrderPaid
    // is its message.
    const queue = t.at("orders");
    const actions = await queue<{ action: string; actor: string }[]>`
      select action, actor from queue.actions
       where delivery_id = ${paid.id} order by id`;
    assert.deepEqual(actions.map((a) => [a.action, a.actor]), [
      ["redrive", "Morning shift"],
      ["redrive", "Morning shift"],
    ]);
    const [row] = await queue<{ state: string; attempts: number }[]>`
      select state, attempts from queue.deliveries where id = ${paid.id}`;
    assert.deepEqual([row.state, row.attempts], ["done", 6]);
    const cards = await t.at("kitchen")<{ state: string }[]>`
      select state from kitchen.cards where order_id = ${orderId}`;
    assert.deepEqual(cards.map((c) => c.state), ["confirmed"]);
  });
});
