/**
 * The deliveries page's JSON twin (`GET /api/console/deliveries`): the
 * counts per state agree with the rows whether or not the closure audit has
 * counted them yet, the list is this sandbox's deliveries, newest message
 * first, and its filters narrow it. Neither reads another sandbox's rows.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersSettle,
  type DeliveryJson,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { inEveryQueue } from "./_console_ops.ts";
import { counted } from "../lib/ledger/audit.ts";

interface Page {
  counts: Record<string, number>;
  items: DeliveryJson[];
}

async function page(client: Client, query = ""): Promise<Page> {
  const { status, body } = await client.json<Page>(
    "GET",
    `/api/console/deliveries${query ? `?${query}` : ""}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

Deno.test("console deliveries: counts and newest-first list of one sandbox, with or without the audit", async () => {
  await withTestBakery(async (t) => {
    const a = t.client();
    const b = t.client();
    const { sandboxId: sandboxA } = await signIn(a, "Deliveries operator A");
    await signIn(b, "Deliveries operator B");

    // A: a paid order, then an order the kitchen refuses (one dead letter).
    const first = await placeOrderVia(a);
    await payVia(a, first.orderId);
    await orderSettles(a, first.orderId, "paid", 10_000);
    const put = await a.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
    });
    assert.equal(put.status, 200);
    const second = await placeOrderVia(a);
    await deadLettersSettle(a, 1);
    // B: one order, placed last, so its messages are the newest of all.
    const other = await placeOrderVia(b);
    await orderSettles(b, other.orderId, "placed", 10_000);

    const rows = () =>
      inEveryQueue(
        t.sql,
        (sql) =>
          sql<{ id: string; state: string; counted: boolean }[]>`
        select d.id, d.state, ${counted(sql)} as counted
          from queue.deliveries d
         where d.tenant_id = ${sandboxA}`,
      );
    const expected = (all: { state: string }[]) => {
      const counts: Record<string, number> = {
        pending: 0,
        retrying: 0,
        in_flight: 0,
        done: 0,
        dead: 0,
        refused: 0,
        held: 0,
      };
      for (const r of all) counts[r.state]++;
      return counts;
    };

    // Now, and once the audit has counted every done delivery: the done
    // count comes from the audit's counters plus the rows not counted yet.
    const before = await rows();
    assert.ok(before.length > 0);
    assert.deepEqual((await page(a)).counts, expected(before));
    await eventually(
      "the audit to count every done delivery",
      async () => (await rows()).every((r) => r.state !== "done" || r.counted),
    );
    const after = await rows();
    const { counts, items } = await page(a);
    assert.deepEqual(counts, expected(after));
    assert.equal(counts.dead, 1);
    assert.equal(counts.done, after.length - 1);

    // The list: exactly A's deliveries, none of B's, newest message first.
    assert.deepEqual(
      items.map((d) => d.id).sort((x, y) => x - y),
      after.map((r) => Number(r.id)).sort((x, y) => x - y),
    );
    assert.ok(items.every((d) => d.orderId !== other.orderId));
    assert.equal(items[0].orderId, second.orderId);
    assert.equal(items[0].eventType, "OrderPlaced");
    const orderPaidAt = items.findIndex((d) => d.eventType === "OrderPaid");
    const placedFirstAt = items.findIndex((d) =>
      d.orderId === first.orderId && d.eventType === "OrderPlaced"
    );
    assert.ok(orderPaidAt >= 0 && placedFirstAt > orderPaidAt);

    // Filters: done to the kitchen (OrderPlaced and OrderPaid of the first
    // order), and the one dead letter.
    const kitchenDone = (await page(a, "state=done&subscriber=kitchen")).items;
    assert.deepEqual(
      kitchenDone.map((d) => [d.orderId, d.eventType, d.state]),
      [
        [first.orderId, "OrderPaid", "done"],
        [first.orderId, "OrderPlaced", "done"],
      ],
    );
    const dead = (await page(a, "state=dead")).items;
    assert.deepEqual(
      dead.map((d) => [d.orderId, d.subscriber]),
      [[second.orderId, "kitchen"]],
    );

    // B sees its own order's deliveries only, and counts only those.
    const bPage = await page(b);
    assert.ok(bPage.items.length > 0);
    assert.ok(bPage.items.every((d) => d.orderId === other.orderId));
    assert.equal(bPage.counts.done, bPage.items.length);
    assert.equal(bPage.counts.dead, 0);
  });
});
