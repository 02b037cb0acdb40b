/**
 * A declined card: the order is `payment_failed`, the payment failed, and
 * nothing reaches the kitchen as paid. The order can still be paid.
 */
import assert from "node:assert/strict";
import {
  countOf,
  eventually,
  orderSettles,
  placeOrderVia,
  sentBy,
  withTestBakery,
} from "./_app.ts";

Deno.test("declined card: payment_failed, nothing paid; paying again succeeds", async () => {
  await withTestBakery(async (t) => {
    const orders = t.at("orders");
    const client = t.client();
    const { orderId } = await placeOrderVia(client);

    const declined = await client.json<{ paymentId: string }>(
      "POST",
      `/api/orders/${orderId}/pay`,
      { card: "4000000000000002" },
    );
    assert.equal(declined.status, 202);
    const failedId = declined.body.paymentId;

    const order = await orderSettles(client, orderId, "payment_failed", 5_000);
    assert.deepEqual(
      order.events.map((e) => [e.type, e.version]),
      [["OrderPlaced", 1], ["PaymentFailed", 2]],
    );
    assert.equal(order.paymentRef, null);
    const [payment] = await t.at("billing")`
      select state, failure_reason from billing.payments where id = ${failedId}`;
    assert.equal(payment.state, "failed");
    assert.match(payment.failure_reason, /declined/);

    // The kitchen has the card of the placed order, and nothing paid.
    const [card] = await t.at("kitchen")`
      select state, version from kitchen.cards where order_id = ${orderId}`;
    assert.deepEqual([card.state, card.version], ["new", 1]);
    const paidMessages = () =>
      countOf(orders<{ n: number }[]>`
        select count(*)::int as n from queue.messages
         where aggregate_id = ${orderId} and type = 'OrderPaid'`);
    assert.equal(await paidMessages(), 0);
    assert.equal(
      await countOf(orders<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(orders, "orders")} o
         where type = 'OrderPaid' and envelope->>'aggregateId' = ${orderId}`),
      0,
    );
    assert.equal(
      await countOf(t.at("receipts")<{ n: number }[]>`
        select count(*)::int as n from receipts.receipts where order_id = ${orderId}`),
      0,
    );

    // The same order, paid again with a good card.
    const paid = await client.json<{ paymentId: string }>(
      "POST",
      `/api/orders/${orderId}/pay`,
      { card: "4242424242424242" },
    );
    assert.equal(paid.status, 202);
    assert.notEqual(paid.body.paymentId, failedId);
    const after = await orderSettles(client, orderId, "paid", 5_000);
    assert.equal(after.paymentRef, paid.body.paymentId);
    assert.deepEqual(
      after.events.map((e) => [e.type, e.version]),
      [["OrderPlaced", 1], ["PaymentFailed", 2], ["OrderPaid", 3]],
    );
    await eventually("the card to be confirmed", async () => {
      const [c] = await t.at("kitchen")`
        select state from kitchen.cards where order_id = ${orderId}`;
      return c.state === "confirmed";
    });
    assert.equal(await paidMessages(), 1);
    const payments = await t.at("billing")`
      select id, state from billing.payments where order_id = ${orderId} order by created_at`;
    assert.deepEqual(payments.map((p) => [p.id, p.state]), [
      [failedId, "failed"],
      [paid.body.paymentId, "succeeded"],
    ]);
  });
});
