/**
 * The path of one paid order, through HTTP against real PostgreSQL: placed,
 * paid with Stripe's test card through a signed webhook, and applied once by
 * every receiver. Every answer the client gets is checked against the
 * OpenAPI document (tests/_openapi.ts).
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { RECEIVERS } from "../services/routing.ts";
import {
  countOf,
  orderSettles,
  placeOrderVia,
  sentBy,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

/**
 * How many rows of each receiver's inbox hold `messageId`; `at` gives the
 * pool of a receiver's database.
 */
async function inboxCounts(at: (service: string) => Sql, messageId: string) {
  const counts: Record<string, number> = {};
  for (const receiver of RECEIVERS) {
    const sql = at(receiver);
    counts[receiver] = await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(`${receiver}.inbox`)}
       where message_id = ${messageId}`);
  }
  return counts;
}

const ONCE_EACH = Object.fromEntries(RECEIVERS.map((r) => [r, 1]));

Deno.test("paid order: every receiver applies OrderPaid exactly once", async () => {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    const { orderId, totalCents } = await placeOrderVia(client);
    assert.equal(totalCents, 2 * 350 + 650);

    const pay = await client.json<{ paymentId: string }>(
      "POST",
      `/api/orders/${orderId}/pay`,
      { card: "4242424242424242" },
    );
    assert.equal(pay.status, 202);
    const { paymentId } = pay.body;
    assert.match(paymentId, /^pi_test_/);

    const order = await orderSettles(client, orderId, "paid", 5_000);

    // The order and its history.
    assert.equal(order.paymentRef, paymentId);
    assert.deepEqual(
      order.events.map((e) => [e.type, e.version]),
      [["OrderPlaced", 1], ["OrderPaid", 2]],
    );
    const paidId = order.events[1].messageId;
    assert.deepEqual(
      order.deliveries.filter((d) => d.eventType === "OrderPaid")
        .map((d) => d.subscriber).sort(),
      [...RECEIVERS].sort(),
    );
    assert.ok(order.deliveries.every((d) => d.state === "done"));
    assert.ok(order.deliveries.every((d) => d.lastError === null));

    // Each receiver's inbox holds the OrderPaid message once.
    assert.deepEqual(await inboxCounts(t.at, paidId), ONCE_EACH);

    // And each applied it: one row of effect per receiver.
    const cards = await t.at("kitchen")`
      select state, version from kitchen.cards where order_id = ${orderId}`;
    assert.deepEqual(cards.map((c) => [c.state, c.version]), [[
      "confirmed",
      2,
    ]]);
    const bookings = await t.at("schedule")`
      select sku, qty, state from schedule.bookings
       where order_id = ${orderId} order by sku`;
    assert.deepEqual(bookings.map((b) => [b.sku, b.qty, b.state]), [
      ["cardamom-bun", 2, "reserved"],
      ["country-loaf", 1, "reserved"],
    ]);
    const receipts = await t.at("receipts")`
      select total_cents, payment_ref, message_id from receipts.receipts
       where order_id = ${orderId}`;
    assert.deepEqual(
      receipts.map((r) => [r.total_cents, r.payment_ref, r.message_id]),
      [[1350, paymentId, paidId]],
    );
    const stops = await t.at("dispatch")`
      select state from dispatch.stops where order_id = ${orderId}`;
    assert.deepEqual(stops.map((s) => s.state), ["confirmed"]);
    const interactions = await t.at("crm")`
      select kind, message_id from crm.interactions where order_id = ${orderId}`;
    assert.deepEqual(interactions.map((i) => [i.kind, i.message_id]), [[
      "payment",
      paidId,
    ]]);
    const history = await t.at("customers")`
      select event from customers.history where order_id = ${orderId} order by id`;
    assert.deepEqual(history.map((h) => h.event), [
      "OrderPlaced",
      "OrderPaid",
    ]);

    // Billing settled the payment once, with one message.
    const payments = await t.at("billing")`
      select id, state, amount_cents from billing.payments where order_id = ${orderId}`;
    assert.deepEqual(payments.map((p) => [p.id, p.state, p.amount_cents]), [[
      paymentId,
      "succeeded",
      1350,
    ]]);
    assert.equal(
      await countOf(t.at("billing")<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(t.at("billing"), "billing")} o
         where type = 'PaymentSucceeded' and envelope->>'aggregateId' = ${orderId}`),
      1,
    );
    const [row] = await t.at("orders")`
      select state, version from orders.orders where id = ${orderId}`;
    assert.deepEqual([row.state, row.version], ["paid", 2]);
    assert.deepEqual(
      t.lines.filter((l) => l.level === "error").map((l) => l.event),
      [],
    );
  });
});

Deno.test("paid order: a pickup order gets no dispatch stop", async () => {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    const { orderId } = await placeOrderVia(
      client,
      walkthroughOrder(crypto.randomUUID(), "pickup"),
    );
    const pay = await client.json("POST", `/api/orders/${orderId}/pay`, {
      card: "4242 4242 4242 4242",
    });
    assert.equal(pay.status, 202);
    const order = await orderSettles(client, orderId, "paid", 5_000);
    const paidId = order.events.find((e) => e.type === "OrderPaid")!.messageId;

    // Dispatch took the message and answered that it skipped it.
    assert.deepEqual(await inboxCounts(t.at, paidId), ONCE_EACH);
    const [answer] = await t.at("dispatch")`
      select status, outcome from dispatch.inbox where message_id = ${paidId}`;
    assert.equal(answer.status, 200);
    assert.match(String(answer.outcome.skipped), /pickup/);
    assert.equal(
      await countOf(t.at("dispatch")<{ n: number }[]>`
        select count(*)::int as n from dispatch.stops where order_id = ${orderId}`),
      0,
    );
    // The other receivers applied it as for a delivery.
    const [card] = await t.at("kitchen")`
      select state from kitchen.cards where order_id = ${orderId}`;
    assert.equal(card.state, "confirmed");
    assert.equal(
      await countOf(t.at("receipts")<{ n: number }[]>`
        select count(*)::int as n from receipts.receipts where order_id = ${orderId}`),
      1,
    );
  });
});
