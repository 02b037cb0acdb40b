/**
 * The day's capacity (services/menu.ts, `dailyCapacity`): an order that
 * would pass it is a 409 that names the product and what is left, and writes
 * nothing; cancelling an order gives its capacity back.
 */
import assert from "node:assert/strict";
import { menuItem } from "../services/menu.ts";
import { MAX_QTY } from "../services/orders/schema.ts";
import { rowCounts, withTestBakery } from "./_app.ts";

const LOAF = menuItem("country-loaf")!;
const LEFT = 4;

/** A day `n` days from now (UTC), fixed once so midnight cannot move it. */
const dayAhead = (n: number) =>
  new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
const DAY = dayAhead(2);

function order(
  key: string,
  items: { sku: string; qty: number }[],
  day = DAY,
) {
  return {
    items,
    customer: { name: "Ada Baker", email: "ada@example.com" },
    fulfilment: "pickup",
    day,
    idempotencyKey: key,
  };
}

Deno.test("capacity: an order over the day's capacity is a 409 and writes nothing; a cancel gives it back", async () => {
  // One line may hold up to MAX_QTY; the first order takes all but LEFT.
  assert.ok(LOAF.dailyCapacity - LEFT <= MAX_QTY);
  await withTestBakery(async (t) => {
    const client = t.client();
    const first = await client.json<{ orderId: string }>(
      "POST",
      "/api/orders",
      order("key-capacity-first", [{
        sku: LOAF.sku,
        qty: LOAF.dailyCapacity - LEFT,
      }]),
    );
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const before = await rowCounts(t.sql);

    // Buns first: the line that fits must not keep its capacity either.
    const tooMany = order("key-capacity-second", [
      { sku: "cardamom-bun", qty: 2 },
      { sku: LOAF.sku, qty: LEFT + 1 },
    ]);
    const refused = await client.json<
      { error: string; issues: { path: string; message: string }[] }
    >("POST", "/api/orders", tooMany);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.match(refused.body.error, new RegExp(LOAF.name));
    assert.match(refused.body.error, new RegExp(`only ${LEFT} `));
    assert.match(refused.body.error, new RegExp(`asked for ${LEFT + 1}`));
    assert.match(refused.body.error, new RegExp(DAY));
    assert.equal(refused.body.issues[0].path, "items.1.qty");
    assert.match(refused.body.issues[0].message, new RegExp(`${LEFT} left`));
    assert.deepEqual(await rowCounts(t.sql), before);

    // Exactly what is left still fits, and then the product is sold out.
    const exact = await client.json<{ orderId: string }>(
      "POST",
      "/api/orders",
      order("key-capacity-exact", [{ sku: LOAF.sku, qty: LEFT }]),
    );
    assert.equal(exact.status, 201, JSON.stringify(exact.body));
    const soldOut = await client.json<
      { error: string; issues: { path: string }[] }
    >(
      "POST",
      "/api/orders",
      order("key-capacity-sold-out", [{ sku: LOAF.sku, qty: 1 }]),
    );
    assert.equal(soldOut.status, 409);
    assert.match(soldOut.body.error, new RegExp(`${LOAF.name} is sold out`));
    assert.equal(soldOut.body.issues[0].path, "items.0.qty");

    // Cancelling the first order gives its loaves back; the refused order,
    // sent again with its own key (which it never used up), now fits.
    const cancel = await client.json(
      "POST",
      `/api/orders/${first.body.orderId}/cancel`,
    );
    assert.equal(cancel.status, 202);
    // A second cancel changes nothing: the loaves are not given back twice.
    const again = await client.json(
      "POST",
      `/api/orders/${first.body.orderId}/cancel`,
    );
    assert.equal(again.status, 202);
    const [loaves] = await t.at("orders")`
      select qty from orders.day_counts where sku = ${LOAF.sku}`;
    assert.equal(loaves.qty, LEFT);
    const retried = await client.json("POST", "/api/orders", tooMany);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    const taken = await t.at("orders")`
      select sku, qty from orders.day_counts order by sku`;
    assert.deepEqual(taken.map((d) => [d.sku, d.qty]), [
      ["cardamom-bun", 2],
      [LOAF.sku, LEFT + LEFT + 1],
    ]);
  });
});

Deno.test("capacity: another day has its own capacity", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const full = await client.json(
      "POST",
      "/api/orders",
      order("key-capacity-full-day", [{
        sku: LOAF.sku,
        qty: LOAF.dailyCapacity,
      }]),
    );
    assert.equal(full.status, 201, JSON.stringify(full.body));
    const next = await client.json(
      "POST",
      "/api/orders",
      order("key-capacity-next-day", [{ sku: LOAF.sku, qty: 1 }], dayAhead(3)),
    );
    assert.equal(next.status, 201, JSON.stringify(next.body));
    const sameDay = await client.json(
      "POST",
      "/api/orders",
      order("key-capacity-full-day-2", [{ sku: LOAF.sku, qty: 1 }]),
    );
    assert.equal(sameDay.status, 409);
  });
});

Deno.test("capacity: concurrent orders share the last loaves, in any line order", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const signIn = await client.json("POST", "/api/session", { name: "Ada" });
    assert.equal(signIn.status, 201);
    // Twenty orders at once, half listing buns first and half loaves first,
    // each wanting 2 loaves: the capacity allows only so many of them.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const lines = [
          { sku: "cardamom-bun", qty: 1 },
          { sku: LOAF.sku, qty: 2 },
        ];
        return client.json<{ error?: string }>(
          "POST",
          "/api/orders",
          order(`key-capacity-race-${i}`, i % 2 ? lines.reverse() : lines),
        );
      }),
    );
    const statuses = answers.map((a) => a.status);
    const placed = statuses.filter((s) => s === 201).length;
    assert.deepEqual(
      statuses.filter((s) => s !== 201 && s !== 409),
      [],
      JSON.stringify(t.lines.filter((l) => l.level === "error")[0]),
    );
    assert.equal(placed, Math.min(20, Math.floor(LOAF.dailyCapacity / 2)));
    const taken = await t.at("orders")`
      select sku, qty from orders.day_counts order by sku`;
    assert.deepEqual(taken.map((d) => [d.sku, d.qty]), [
      ["cardamom-bun", placed],
      [LOAF.sku, placed * 2],
    ]);
    assert.deepEqual(
      t.lines.filter((l) => l.level === "error").map((l) => l.event),
      [],
    );
  });
});
