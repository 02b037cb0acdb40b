/**
 * Concurrent commands of one sandbox while its outbox holds rows waiting for
 * a retry: each command also flushes those rows, and two flushes that took
 * the same rows in different orders deadlocked, a 500 for one of the orders.
 */
import assert from "node:assert/strict";
import {
  countOf,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";

const inDays = (n: number) =>
  new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

Deno.test("concurrent orders and payments while the queue refuses sends all succeed", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client);
    const faults = await client.json("PUT", "/api/console/faults", {
      queueRefusesSends: true,
    });
    assert.equal(faults.status, 200);
    let placed = 0;
    for (let i = 0; i < 600; i += 10) {
      // placeOrderVia and payVia throw unless they answer 201 and 202.
      await Promise.all(Array.from({ length: 10 }, async (_, j) => {
        const { orderId } = await placeOrderVia(client, {
          items: [{ sku: "cardamom-bun", qty: 1 }],
          customer: { name: "Ada Baker", email: "ada@example.com" },
          fulfilment: "delivery",
          day: inDays(1 + ((i + j) % 50)),
          idempotencyKey: crypto.randomUUID(),
        });
        await payVia(client, orderId);
        placed++;
      }));
    }
    assert.equal(placed, 600);
    const orders = await countOf(t.at("orders")<{ n: number }[]>`
      select count(*)::int as n from orders.orders`);
    assert.equal(orders, 600);
    assert.deepEqual(
      t.lines.filter((l) => l.event === "http_error").map((l) => l.error),
      [],
    );
  }, { RATE_LIMIT_PER_MINUTE: "0" });
});
