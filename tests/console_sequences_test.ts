/**
 * Sequences that hold (lib/ledger/states.ts, `held`): with "Kitchen keeps
 * each order's sequence" on, the kitchen refuses, an order is placed and
 * paid, and its OrderPlaced dies there while its OrderPaid is held behind
 * it, not dead. One redrive of OrderPlaced then confirms the card once, the
 * OrderPaid follows by itself, and the closure ends clean. Over both
 * carriers.
 */
import assert from "node:assert/strict";
import {
  deadLettersSettle,
  eventually,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { natsTest, withJetStream } from "./_nats.ts";

interface Row {
  id: string;
  type: string;
  state: string;
  held_behind: string | null;
}

async function holdsInSequence(env: Record<string, string> = {}) {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    await signIn(client, "Sequence shift");
    await setFaults(client, { kitchenRefuses: true, kitchenKeepsOrder: true });
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);

    // OrderPlaced is the one dead letter; OrderPaid waits behind it.
    const [dead] = await deadLettersSettle(client, 1, "", 20_000);
    assert.equal(dead.eventType, "OrderPlaced");
    assert.equal(dead.subscriber, "kitchen");
    const kitchen = () =>
      t.at("orders")<Row[]>`
        select d.id, d.type, d.state, d.held_behind from queue.deliveries d
         where d.subscriber = 'kitchen' and d.aggregate_id = ${orderId}
         order by d.message_id`;
    let rows: Row[] = [];
    await eventually("the kitchen's OrderPaid to be held", async () => {
      rows = await kitchen();
      return rows.some((r) => r.type === "OrderPaid" && r.state === "held");
    }, 20_000);
    assert.deepEqual(
      rows.map((
        r,
      ) => [r.type, r.state, r.held_behind && Number(r.held_behind)]),
      [["OrderPlaced", "dead", null], ["OrderPaid", "held", dead.id]],
    );
    // Held is owed: in flight in the closure, its own tab on Deliveries.
    const closure = await client.json<{ totals: Record<string, number> }>(
      "GET",
      "/api/console/closure",
    );
    assert.equal(closure.body.totals.dead, 1);
    assert.ok(closure.body.totals.inFlight >= 1, JSON.stringify(closure.body));
    const tabs = await client.json<{ counts: Record<string, number> }>(
      "GET",
      "/api/console/deliveries",
    );
    assert.equal(tabs.body.counts.held, 1, JSON.stringify(tabs.body.counts));

    // The kitchen is back: one redrive, of OrderPlaced alone.
    await setFaults(client, { kitchenRefuses: false });
    const redrive = await client.json<{ ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { ids: [dead.id] },
    );
    assert.equal(redrive.status, 202, JSON.stringify(redrive.body));
    assert.deepEqual(redrive.body.ids, [dead.id]);
    await eventually("both kitchen deliveries to be done", async () => {
      rows = await kitchen();
      return rows.every((r) => r.state === "done");
    }, 20_000);
    assert.deepEqual(rows.map((r) => r.held_behind), [null, null]);

    // The card, confirmed once; the OrderPaid's last try answered 200.
    const cards = await t.at("kitchen")<{ state: string }[]>`
      select state from kitchen.cards where order_id = ${orderId}`;
    assert.deepEqual(cards.map((c) => c.state), ["confirmed"]);
    const paid = rows.find((r) => r.type === "OrderPaid")!;
    const [last] = await t.at("orders")<{ status: number }[]>`
      select last_status as status from queue.deliveries
       where id = ${paid.id}`;
    assert.equal(last.status, 200);
    // Every attempt of the OrderPaid before its release was recorded,
    // the one that held it as held.
    const outcomes = await t.at("orders")<{ outcome: string }[]>`
      select outcome from queue.attempts where delivery_id = ${paid.id}
       order by attempt`;
    assert.ok(
      outcomes.some((o) => o.outcome === "held"),
      JSON.stringify(outcomes),
    );
    await eventually("the closure to be clean", async () => {
      const { body } = await client.json<{ totals: Record<string, number> }>(
        "GET",
        "/api/console/closure",
      );
      const { owed, inFlight, dead, mismatch } = body.totals;
      return owed + inFlight + dead + mismatch === 0;
    }, 20_000);
    // How it's built's walkthrough counts the held OrderPaid as the 409
    // step, and the one redrive as the redrive in order.
    const tryIt = await client.json<
      { steps: { step: string; done: boolean }[] }
    >("GET", "/api/how-it-works/try-it");
    assert.deepEqual(
      tryIt.body.steps.filter((s) => !s.done).map((s) => s.step),
      [],
    );
  }, env);
}

Deno.test(
  "sequences: with the kitchen keeping order, OrderPaid is held behind its dead OrderPlaced, and one redrive applies both in order",
  () => holdsInSequence(),
);

natsTest(
  "sequences over JetStream: the held OrderPaid is published again once its OrderPlaced is applied",
  () => withJetStream(holdsInSequence),
);
