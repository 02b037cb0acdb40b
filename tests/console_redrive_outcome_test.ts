/**
 * A redrive that keeps each order's sequence and says what became of it,
 * through the console API: the kitchen refuses, two orders are placed and
 * paid, and its OrderPlaced and OrderPaid of both die. Redriving the
 * OrderPaid ones alone: the dry run names the OrderPlaced they wait on,
 * and after the redrive the outcome reports both dead again with the
 * kitchen's 409. With `includeEarlier`, all four go, each order's
 * OrderPlaced before its OrderPaid, and the outcome reports four applied.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersSettle,
  type DeliveryJson,
  eventually,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { natsTest, withJetStream } from "./_nats.ts";

interface Outcome {
  applied: number;
  retrying: number;
  refused: number;
  notRedriven: number;
  settled: boolean;
  deadAgain: { id: number; eventType: string; lastError: string | null }[];
}

interface WaitedOn {
  id: number;
  eventType: string;
  subscriber: string;
  orderId: string;
  before: number[];
}

/** Polls the outcome of `ids` until none is retrying; returns it. */
async function settledOutcome(client: Client, ids: number[]) {
  let outcome: Outcome | undefined;
  await eventually("the redrive to settle", async () => {
    const { status, body } = await client.json<Outcome>(
      "GET",
      `/api/console/redrive-outcome?ids=${ids.join(",")}`,
    );
    assert.equal(status, 200, JSON.stringify(body));
    outcome = body;
    return body.settled;
  }, 20_000);
  return outcome!;
}

async function redriveInSequence(env: Record<string, string> = {}) {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    await signIn(client, "Redrive shift");
    await setFaults(client, { kitchenRefuses: true });
    const orders: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { orderId } = await placeOrderVia(client);
      await payVia(client, orderId);
      orders.push(orderId);
    }
    const dead = await deadLettersSettle(client, 4, "", 20_000);
    await setFaults(client, { kitchenRefuses: false });
    const of = (orderId: string, type: string) =>
      dead.find((d: DeliveryJson) =>
        d.orderId === orderId && d.eventType === type
      )!;
    const placed = orders.map((o) => of(o, "OrderPlaced").id);
    const paid = orders.map((o) => of(o, "OrderPaid").id);

    // The OrderPaid ones alone: the dry run names what they wait on.
    const filter = { subscriber: "kitchen", eventType: "OrderPaid" };
    const dry = await client.json<
      { count: number; waitsOn: WaitedOn[] }
    >("POST", "/api/console/dead-letters/redrive", { ...filter, dryRun: true });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.equal(dry.body.count, 2);
    assert.deepEqual(
      dry.body.waitsOn.map((w) => [w.id, w.eventType, w.orderId, w.before])
        .sort(),
      orders.map((o, i) => [placed[i], "OrderPlaced", o, [paid[i]]]).sort(),
    );
    // A malformed flag is a 400 naming it.
    const bad = await client.json<{ issues: { path: string }[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { ...filter, includeEarlier: "yes" },
    );
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.issues.map((i) => i.path), ["includeEarlier"]);

    // Sent without them: both die again, and the outcome says so.
    const alone = await client.json<{ ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      filter,
    );
    assert.equal(alone.status, 202, JSON.stringify(alone.body));
    assert.deepEqual([...alone.body.ids].sort(), [...paid].sort());
    const first = await settledOutcome(client, alone.body.ids);
    assert.deepEqual(
      [first.applied, first.retrying, first.refused, first.notRedriven],
      [0, 0, 0, 0],
    );
    assert.deepEqual(
      first.deadAgain.map((d) => d.id).sort(),
      [...paid].sort(),
    );
    for (const d of first.deadAgain) {
      assert.match(d.lastError ?? "", /^Kitchen answered 409\b.*no card/);
    }
    // Bad ids are a 400 naming the field.
    const badIds = await client.json<{ issues: { path: string }[] }>(
      "GET",
      "/api/console/redrive-outcome?ids=1,x",
    );
    assert.equal(badIds.status, 400);
    assert.deepEqual(badIds.body.issues.map((i) => i.path), ["ids"]);

    // With the earlier ones: all four, each order in sequence.
    const since = new Date();
    const both = await client.json<{ count: number; ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { ...filter, includeEarlier: true },
    );
    assert.equal(both.status, 202, JSON.stringify(both.body));
    assert.deepEqual(
      [...both.body.ids].sort(),
      [...placed, ...paid].sort(),
    );
    const second = await settledOutcome(client, both.body.ids);
    assert.deepEqual(
      [second.applied, second.retrying, second.deadAgain],
      [4, 0, []],
    );
    // What the kitchen applied: both cards, confirmed.
    const cards = await t.at("kitchen")<{ order_id: string; state: string }[]>`
      select order_id, state from kitchen.cards order by order_id`;
    assert.deepEqual(
      cards.map((c) => [c.order_id, c.state]),
      [...orders].sort().map((o) => [o, "confirmed"]),
    );
    // The attempts since: every one answered 200, so the kitchen never met
    // an OrderPaid before its card (that is a 409), and none started
    // before its OrderPlaced. One batch's attempts share a start, and
    // their ids follow the delivery ids, which over JetStream follow
    // consumption, not the order sent: the start is what can be compared.
    const attempts = await t.at("orders")<
      { delivery_id: string; status: number; started_at: Date }[]
    >`
      select a.delivery_id, a.status, a.started_at from queue.attempts a
       where a.started_at >= ${since}`;
    const started = new Map(
      attempts.map((a) => [Number(a.delivery_id), +a.started_at]),
    );
    assert.deepEqual(
      [...started.keys()].sort(),
      [...placed, ...paid].sort(),
    );
    assert.ok(
      attempts.every((a) => a.status === 200),
      JSON.stringify(attempts),
    );
    for (let i = 0; i < orders.length; i++) {
      assert.ok(
        started.get(placed[i])! <= started.get(paid[i])!,
        `order ${i + 1}: ${JSON.stringify(attempts)}`,
      );
    }
  }, env);
}

Deno.test(
  "redrive: the dry run names the earlier dead letters, the outcome says who died again, and with them each order goes in sequence",
  () => redriveInSequence(),
);

// The republisher gives a redrive's messages back to the broker: it too
// keeps each order's messages in the order they were written.
natsTest(
  "redrive over JetStream: each order's earlier messages go first",
  () => withJetStream(redriveInSequence),
);
