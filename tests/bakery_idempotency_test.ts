/**
 * Idempotency keys on `POST /api/orders`: the same key places one order, in
 * sequence or all at once; the same key with another body is a 409.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import {
  countOf,
  rowCounts,
  sentBy,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

async function ordersOfKey(sql: Sql, key: string) {
  return {
    commandsSeen: await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from orders.commands_seen
       where idempotency_key = ${key}`),
    orders: await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from orders.orders o
        join orders.commands_seen k on k.order_id = o.id
       where k.idempotency_key = ${key}`),
  };
}

async function placedMessages(sql: Sql) {
  return await countOf(sql<{ n: number }[]>`
    select count(*)::int as n from ${sentBy(sql, "orders")} o
     where type = 'OrderPlaced'`);
}

Deno.test("idempotency: the same key twice gives the same order (201, then 200)", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const order = walkthroughOrder("key-sequential-0001");
    const first = await client.json<{ orderId: string; state: string }>(
      "POST",
      "/api/orders",
      order,
    );
    assert.equal(first.status, 201);
    assert.equal(first.body.state, "placed");
    const before = await rowCounts(t.sql);

    const second = await client.json<{ orderId: string; totalCents: number }>(
      "POST",
      "/api/orders",
      order,
    );
    assert.equal(second.status, 200);
    assert.equal(second.body.orderId, first.body.orderId);
    assert.equal(second.body.totalCents, 1350);
    assert.deepEqual(await rowCounts(t.sql), before);
    assert.deepEqual(await ordersOfKey(t.at("orders"), order.idempotencyKey), {
      commandsSeen: 1,
      orders: 1,
    });
    assert.equal(await placedMessages(t.at("orders")), 1);
  });
});

Deno.test("idempotency: ten concurrent posts with one key place one order", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    // One session first, so that all ten posts act in the same sandbox.
    const signIn = await client.json("POST", "/api/session", { name: "Ada" });
    assert.equal(signIn.status, 201);
    const order = walkthroughOrder("key-concurrent-0001");

    const answers = await Promise.all(
      Array.from(
        { length: 10 },
        () => client.json<{ orderId: string }>("POST", "/api/orders", order),
      ),
    );
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
    );
    const ids = new Set(answers.map((a) => a.body.orderId));
    assert.equal(ids.size, 1, `order ids: ${[...ids].join(", ")}`);
    const [orderId] = ids;

    assert.equal(
      await countOf(t.at("orders")<{ n: number }[]>`
        select count(*)::int as n from orders.orders`),
      1,
    );
    assert.deepEqual(await ordersOfKey(t.at("orders"), order.idempotencyKey), {
      commandsSeen: 1,
      orders: 1,
    });
    const placed = await t.at("orders")`
      select envelope->>'aggregateId' as order_id
        from ${sentBy(t.at("orders"), "orders")} o where type = 'OrderPlaced'`;
    assert.deepEqual(placed.map((p) => p.order_id), [orderId]);
    // The capacity was taken once, not ten times.
    const taken = await t.at("orders")`
      select sku, qty from orders.day_counts order by sku`;
    assert.deepEqual(taken.map((d) => [d.sku, d.qty]), [
      ["cardamom-bun", 2],
      ["country-loaf", 1],
    ]);
  });
});

Deno.test("idempotency: the same key with another body is a 409 and writes nothing", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const order = walkthroughOrder("key-conflict-0001");
    const first = await client.json("POST", "/api/orders", order);
    assert.equal(first.status, 201);
    const before = await rowCounts(t.sql);

    const changes = [
      { ...order, items: [{ sku: "cardamom-bun", qty: 3 }] },
      { ...order, fulfilment: "pickup" },
      { ...order, customer: { ...order.customer, email: "eve@example.com" } },
    ];
    for (const changed of changes) {
      const answer = await client.json<
        { error: string; issues: { path: string }[] }
      >("POST", "/api/orders", changed);
      assert.equal(answer.status, 409, JSON.stringify(answer.body));
      assert.match(answer.body.error, /idempotency key/);
      assert.equal(answer.body.issues[0].path, "idempotencyKey");
    }
    assert.deepEqual(await rowCounts(t.sql), before);

    // The original body still answers with the original order.
    const again = await client.json("POST", "/api/orders", order);
    assert.equal(again.status, 200);
    assert.equal(again.body.orderId, first.body.orderId);
  });
});
