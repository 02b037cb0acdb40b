/**
 * Two operators, two sandboxes: neither sees the other's orders, dead
 * letters, kitchen cards or faults, and neither can act on the other's dead
 * letters.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersOf,
  deadLettersSettle,
  type DeliveryJson,
  orderSettles,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue } from "./_console_ops.ts";
import { queueOfDelivery } from "../services/databases.ts";

async function board(client: Client) {
  const { status, body } = await client.json<
    { cards: { orderId: string; state: string }[] }
  >("GET", "/api/kitchen/board");
  assert.equal(status, 200);
  return body.cards.map((c) => c.orderId).sort();
}

async function deliveries(client: Client) {
  const { status, body } = await client.json<{ items: DeliveryJson[] }>(
    "GET",
    "/api/console/deliveries",
  );
  assert.equal(status, 200);
  return body.items;
}

Deno.test("sandboxes: two operators see only their own orders, dead letters, cards and faults", async () => {
  await withTestBakery(async (t) => {
    const a = t.client();
    const b = t.client();
    const sandboxA = (await signIn(a, "Operator A")).sandboxId;
    const sandboxB = (await signIn(b, "Operator B")).sandboxId;
    assert.notEqual(sandboxA, sandboxB);

    // A's first order goes through; then A's kitchen refuses.
    const { orderId: a1 } = await placeOrderVia(a);
    await orderSettles(a, a1, "placed", 5_000);
    const set = await a.json<Record<string, boolean>>(
      "PUT",
      "/api/console/faults",
      { kitchenRefuses: true },
    );
    assert.equal(set.status, 200);
    const { orderId: a2 } = await placeOrderVia(a);
    const [deadA] = await deadLettersSettle(a, 1);
    assert.deepEqual([deadA.subscriber, deadA.orderId], ["kitchen", a2]);

    // B's fault switches are its own: all off, and B's kitchen takes orders.
    const faultsB = await b.json<Record<string, boolean>>(
      "GET",
      "/api/console/faults",
    );
    assert.equal(faultsB.status, 200);
    assert.ok(
      Object.values(faultsB.body).every((on) => on === false),
      JSON.stringify(faultsB.body),
    );
    const { orderId: b1 } = await placeOrderVia(b);
    await orderSettles(b, b1, "placed", 5_000);
    assert.deepEqual(await deadLettersOf(b), []);

    // Orders: each sees its own, the other's are 404.
    for (const [client, own, foreign] of [[a, a1, b1], [b, b1, a1]] as const) {
      assert.equal(
        (await client.json("GET", `/api/orders/${own}`)).status,
        200,
      );
      const other = await client.json("GET", `/api/orders/${foreign}`);
      assert.equal(other.status, 404);
    }

    // Kitchen cards: A has its first order's, B its own.
    assert.deepEqual(await board(a), [a1]);
    assert.deepEqual(await board(b), [b1]);

    // Deliveries and dead letters: none of the other's.
    const orderIdsOf = (items: DeliveryJson[]) =>
      [...new Set(items.map((d) => d.orderId))].sort();
    assert.deepEqual(orderIdsOf(await deliveries(a)), [a1, a2].sort());
    assert.deepEqual(orderIdsOf(await deliveries(b)), [b1]);
    assert.deepEqual((await deadLettersOf(a)).map((d) => d.id), [deadA.id]);
    const foreignDetail = await b.json(
      "GET",
      `/api/console/deliveries/${deadA.id}`,
    );
    assert.equal(foreignDetail.status, 404);

    // B cannot act on A's dead letter: 404, by id or by filter.
    const redrive = await b.json(
      "POST",
      `/api/console/dead-letters/${deadA.id}/redrive`,
    );
    assert.equal(redrive.status, 404);
    const refuse = await b.json(
      "POST",
      `/api/console/dead-letters/${deadA.id}/refuse`,
      { reason: "not mine" },
    );
    assert.equal(refuse.status, 404);
    const bulkRedrive = await b.json<{ count: number }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { ids: [deadA.id] },
    );
    assert.equal(bulkRedrive.status, 202);
    assert.equal(bulkRedrive.body.count, 0);
    const bulkRefuse = await b.json<{ count: number }>(
      "POST",
      "/api/console/dead-letters/refuse",
      { subscriber: "kitchen", reason: "not mine either" },
    );
    assert.equal(bulkRefuse.status, 200);
    assert.equal(bulkRefuse.body.count, 0);

    // A's dead letter is as it was.
    const [afterA] = await deadLettersOf(a);
    assert.deepEqual(afterA, deadA);
    const [row] = await t.at(queueOfDelivery(deadA.id) ?? "orders")<
      { state: string; attempts: number; redrives: number }[]
    >`select state, attempts, redrives from queue.deliveries where id = ${deadA.id}`;
    assert.deepEqual([row.state, row.attempts, row.redrives], ["dead", 4, 0]);
    assert.equal(
      await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.actions`,
      ),
      0,
    );

    // The closure of each counts only its own obligations.
    const closureOf = async (client: Client) =>
      (await client.json<{ totals: Record<string, number> }>(
        "GET",
        "/api/console/closure",
      )).body.totals;
    const totalsA = await closureOf(a);
    const totalsB = await closureOf(b);
    assert.deepEqual([totalsA.closed, totalsA.dead], [5, 1]);
    assert.deepEqual([totalsB.closed, totalsB.dead], [3, 0]);
  });
});
