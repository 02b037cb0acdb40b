/**
 * Cancelling, and the kitchen's version rules: a late or repeated
 * OrderPlaced never brings a cancelled card back, an OrderCancelled that
 * comes first wins, and a second OrderPlaced for one order is refused.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { type Envelope, newEnvelope } from "../lib/outbox/mod.ts";
import {
  bakeryDispatcher,
  INTERNAL_ORIGIN,
} from "../services/receivers/endpoints.ts";
import type { OrderSnapshot } from "../services/events.ts";
import {
  type Client,
  countOf,
  eventually,
  orderSettles,
  placeOrderVia,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";

/** Posts an envelope straight to a receiver, as a consumer would. */
async function deliver(t: TestBakery, receiver: string, envelope: Envelope) {
  const dispatcher = bakeryDispatcher({
    sql: t.sql,
    log: t.bakery.deps.log,
    config: t.bakery.deps.config,
  });
  const response = await dispatcher.send(
    new Request(`${INTERNAL_ORIGIN}/receivers/${receiver}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(envelope),
    }),
  );
  return { status: response.status, body: await response.json() };
}

async function cardOf(sql: Sql, orderId: string) {
  const [card] = await sql<
    { state: string; version: number; placed_message_id: string | null }[]
  >`
    select state, version, placed_message_id from kitchen.cards
     where order_id = ${orderId}`;
  return card;
}

async function sandboxOf(client: Client) {
  const { status, body } = await client.json<{ sandboxId: string }>(
    "GET",
    "/api/session",
  );
  assert.equal(status, 200);
  return body.sandboxId;
}

function snapshot(orderId: string): OrderSnapshot {
  return {
    orderId,
    lines: [{
      sku: "cardamom-bun",
      name: "Cardamom bun",
      qty: 2,
      unitCents: 350,
    }],
    totalCents: 700,
    customer: { name: "Ada Baker", email: "ada@example.com" },
    fulfilment: "pickup",
    day: new Date().toISOString().slice(0, 10),
  };
}

Deno.test("cancel: a redelivered OrderPlaced leaves the cancelled card cancelled", async () => {
  await withTestBakery(async (t) => {
    // The OrderPlaced's deliveries are in its sender's (orders') database.
    const orders = t.at("orders");
    const kitchen = t.at("kitchen");
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    await eventually(
      "the kitchen card",
      async () => (await cardOf(kitchen, orderId))?.state === "new",
    );

    const cancel = await client.json<{ state: string }>(
      "POST",
      `/api/orders/${orderId}/cancel`,
    );
    assert.equal(cancel.status, 202);
    assert.equal(cancel.body.state, "cancelled");
    const order = await orderSettles(client, orderId, "cancelled", 5_000);
    assert.deepEqual(
      order.events.map((e) => [e.type, e.version]),
      [["OrderPlaced", 1], ["OrderCancelled", 2]],
    );
    const placedId = order.events[0].messageId;
    assert.deepEqual(await cardOf(kitchen, orderId), {
      state: "cancelled",
      version: 2,
      placed_message_id: placedId,
    });

    // The queue sends the OrderPlaced to the kitchen once more (over
    // JetStream, the broker gets it again for the kitchen).
    const broker = t.bakery.deps.config.QUEUE === "jetstream";
    const [before] = await orders<{ id: string; attempts: number }[]>`
      update queue.deliveries
         set state = 'pending', next_attempt_at = now(),
             max_attempts = attempts + 1,
             republish_at = case when ${broker} then now() end
       where message_id = ${placedId} and subscriber = 'kitchen'
         and state = 'done'
      returning id, attempts`;
    if (broker) await orders`select pg_notify('queue', '')`;
    assert.ok(before, "the kitchen's OrderPlaced delivery was done");
    t.bakery.messaging?.wakeConsumers();
    await eventually("the redelivery", async () => {
      const [d] = await orders`
        select state, attempts from queue.deliveries where id = ${before.id}`;
      return d.state === "done" && d.attempts === before.attempts + 1;
    });
    const [attempt] = await orders`
      select status, outcome from queue.attempt_log
       where delivery_id = ${before.id} order by attempt desc limit 1`;
    assert.deepEqual([attempt.status, attempt.outcome], [200, "done"]);

    // And straight to the receiver, as a consumer would post it.
    const [stored] = await orders<{ envelope: Envelope }[]>`
      select envelope from queue.messages where message_id = ${placedId}`;
    const direct = await deliver(t, "kitchen", stored.envelope);
    assert.equal(direct.status, 200);
    assert.equal(direct.body.duplicate, true);

    assert.deepEqual(await cardOf(kitchen, orderId), {
      state: "cancelled",
      version: 2,
      placed_message_id: placedId,
    });
    assert.equal(
      await countOf(kitchen<{ n: number }[]>`
        select count(*)::int as n from kitchen.inbox where message_id = ${placedId}`),
      1,
    );
    assert.equal(
      await countOf(kitchen<{ n: number }[]>`
        select count(*)::int as n from kitchen.refusals`),
      0,
    );
    // The schedule released the bookings and kept them released.
    const bookings = await t.at("schedule")`
      select state from schedule.bookings where order_id = ${orderId}`;
    assert.deepEqual(bookings.map((b) => b.state), ["released", "released"]);
  });
});

Deno.test("cancel: an OrderCancelled before its OrderPlaced wins; the late OrderPlaced is stale", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await placeOrderVia(client);
    const sandboxId = await sandboxOf(client);
    const orderId = crypto.randomUUID();
    const cancelled = newEnvelope({
      type: "OrderCancelled",
      aggregateId: orderId,
      aggregateVersion: 2,
      tenantId: sandboxId,
      payload: { ...snapshot(orderId), reason: "changed my mind" },
    });
    const placed = newEnvelope({
      type: "OrderPlaced",
      aggregateId: orderId,
      aggregateVersion: 1,
      tenantId: sandboxId,
      payload: { ...snapshot(orderId) },
    });

    const first = await deliver(t, "kitchen", cancelled);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.card, "cancelled");
    assert.deepEqual(await cardOf(t.at("kitchen"), orderId), {
      state: "cancelled",
      version: 2,
      placed_message_id: null,
    });

    const late = await deliver(t, "kitchen", placed);
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.equal(late.body.duplicate, false);
    assert.match(String(late.body.ignored), /stale/);
    assert.deepEqual(await cardOf(t.at("kitchen"), orderId), {
      state: "cancelled",
      version: 2,
      placed_message_id: null,
    });
    const [inbox] = await t.at("kitchen")`
      select status from kitchen.inbox where message_id = ${placed.messageId}`;
    assert.equal(inbox.status, 200);
    assert.equal(
      await countOf(t.at("kitchen")<{ n: number }[]>`
        select count(*)::int as n from kitchen.refusals`),
      0,
    );

    // The schedule keeps the same rule: released stays released.
    for (const envelope of [cancelled, placed]) {
      const answer = await deliver(t, "schedule", envelope);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }
    const bookings = await t.at("schedule")`
      select sku, state, version from schedule.bookings where order_id = ${orderId}`;
    assert.deepEqual(bookings.map((b) => [b.sku, b.state, b.version]), [
      ["cardamom-bun", "released", 2],
    ]);
  });
});

Deno.test("cancel: a second OrderPlaced with a new message id is refused (422), the card kept", async () => {
  await withTestBakery(async (t) => {
    const kitchen = t.at("kitchen");
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    await eventually(
      "the kitchen card",
      async () => (await cardOf(kitchen, orderId))?.state === "new",
    );
    const original = await cardOf(kitchen, orderId);
    const sandboxId = await sandboxOf(client);
    const second = newEnvelope({
      type: "OrderPlaced",
      aggregateId: orderId,
      aggregateVersion: 1,
      tenantId: sandboxId,
      payload: { ...snapshot(orderId) },
    });

    const refused = await deliver(t, "kitchen", second);
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(String(refused.body.reason), /already has a card/);
    const refusals = await kitchen`
      select message_id, type, reason from kitchen.refusals`;
    assert.deepEqual(
      refusals.map((r) => [r.message_id, r.type]),
      [[second.messageId, "OrderPlaced"]],
    );
    assert.equal(refusals[0].reason, refused.body.reason);
    assert.deepEqual(await cardOf(kitchen, orderId), original);
    const [items] = await kitchen`
      select items from kitchen.cards where order_id = ${orderId}`;
    assert.deepEqual(
      items.items.map((l: { sku: string; qty: number }) => [l.sku, l.qty]),
      [["cardamom-bun", 2], ["country-loaf", 1]],
    );

    // The same message again: the same answer, nothing more recorded.
    const repeat = await deliver(t, "kitchen", second);
    assert.equal(repeat.status, 422);
    assert.equal(repeat.body.duplicate, true);
    assert.equal(
      await countOf(kitchen<{ n: number }[]>`
        select count(*)::int as n from kitchen.refusals`),
      1,
    );
    assert.deepEqual(await cardOf(kitchen, orderId), original);
  });
});
