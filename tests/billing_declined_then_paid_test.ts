/**
 * Real Stripe mode, with Stripe's API on loopback (tests/_stripe_api.ts):
 * Checkout keeps a declined payment's session and PaymentIntent open, so
 * the customer may try another card there. The success that follows a
 * decline settles the same payment; a second pay request in between gets
 * the same session back; and a charge that comes after another payment
 * paid the order is kept for a refund. No charge is left without a row.
 */
import assert from "node:assert/strict";
import {
  type Client,
  countOf,
  orderSettles,
  placeOrderVia,
  sentBy,
  signIn,
  type TestBakery,
} from "./_app.ts";
import {
  intentOf,
  sendSigned,
  stripeEvent,
  withStripeBakery,
} from "./_stripe_api.ts";

async function pay(client: Client, orderId: string) {
  const { status, body } = await client.json<
    { paymentId: string; checkoutUrl: string }
  >("POST", `/api/orders/${orderId}/pay`, {});
  assert.equal(status, 202, JSON.stringify(body));
  assert.ok(body.checkoutUrl, "a Checkout URL to send the visitor to");
  return body;
}

/** What billing sent about the order, by type. */
async function sentAbout(t: TestBakery, orderId: string) {
  const sql = t.at("billing");
  const rows = await sql<{ type: string }[]>`
    select envelope->>'type' as type from ${sentBy(sql, "billing")} o
     where envelope->>'aggregateId' = ${orderId} order by 1`;
  return rows.map((r) => r.type);
}

Deno.test("stripe: a declined card, then a good one in the same checkout, pays the order once", async () => {
  await withStripeBakery(async (t, api) => {
    const client = t.client();
    const { orderId, totalCents } = await placeOrderVia(client);
    const first = await pay(client, orderId);
    const session = api.sessions.get(first.paymentId)!;
    assert.equal(first.checkoutUrl, session.url);

    const declined = await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.payment_failed",
        intentOf(session, totalCents, "declined"),
      ),
    );
    assert.equal(declined.status, 200, JSON.stringify(declined.body));
    await orderSettles(client, orderId, "payment_failed");

    // Paying again hands out the same session: its PaymentIntent can still
    // be charged, so a second one would let the order be charged twice.
    const again = await pay(client, orderId);
    assert.deepEqual(again, first);
    assert.equal(api.sessions.size, 1);

    const paid = await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.succeeded",
        intentOf(session, totalCents, "succeeded"),
      ),
    );
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.match(String(paid.body.outcome), /PaymentSucceeded sent/);
    const order = await orderSettles(client, orderId, "paid");
    assert.equal(order.paymentRef, first.paymentId);
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "PaymentFailed",
      "OrderPaid",
    ]);
    const payments = await t.at("billing")<
      { id: string; state: string; charged_cents: number }[]
    >`select id, state, charged_cents from billing.payments
       where order_id = ${orderId}`;
    assert.deepEqual(payments.map((p) => [p.id, p.state, p.charged_cents]), [
      [first.paymentId, "succeeded", totalCents],
    ]);
    assert.deepEqual(await sentAbout(t, orderId), [
      "PaymentFailed",
      "PaymentSucceeded",
    ]);
    const receipts = await countOf(t.at("receipts")<{ n: number }[]>`
      select count(*)::int as n from receipts.receipts where order_id = ${orderId}`);
    assert.equal(receipts, 1);

    await signIn(client);
    const overview = await client.json<{ refunds: { total: number } }>(
      "GET",
      "/api/console/overview",
    );
    assert.equal(overview.body.refunds.total, 0);
  });
});

Deno.test("stripe: a declined payment charged after another paid the order is kept for a refund by orders", async () => {
  await withStripeBakery(async (t, api) => {
    const client = t.client();
    const { orderId, totalCents } = await placeOrderVia(client);
    const first = await pay(client, orderId);
    const firstSession = api.sessions.get(first.paymentId)!;
    await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.payment_failed",
        intentOf(firstSession, totalCents, "declined"),
      ),
    );
    await orderSettles(client, orderId, "payment_failed");
    // A day on, the first session is past its life (its expiry event not
    // yet here): a pay request opens a new one.
    await t.at("billing")`
      update billing.payments set created_at = now() - interval '25 hours'
       where id = ${first.paymentId}`;
    const second = await pay(client, orderId);
    assert.notEqual(second.paymentId, first.paymentId);
    await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.succeeded",
        intentOf(api.sessions.get(second.paymentId)!, totalCents, "succeeded"),
      ),
    );
    await orderSettles(client, orderId, "paid");

    // Then the first session is paid after all.
    const late = await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.succeeded",
        intentOf(firstSession, totalCents, "succeeded"),
      ),
    );
    assert.equal(late.status, 200);
    assert.match(String(late.body.outcome), /PaymentSucceeded sent/);
    const order = await orderSettles(client, orderId, "paid");
    assert.equal(order.paymentRef, second.paymentId);
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "PaymentFailed",
      "OrderPaid",
      "SecondPaymentReceived",
    ]);
    const [charged] = await t.at("billing")<{ state: string }[]>`
      select state from billing.payments where id = ${first.paymentId}`;
    assert.equal(charged.state, "succeeded");
    assert.deepEqual(await sentAbout(t, orderId), [
      "PaymentFailed",
      "PaymentSucceeded",
      "PaymentSucceeded",
    ]);
    // The receivers heard of one payment only.
    const receipts = await t.at("receipts")<{ payment_ref: string }[]>`
      select payment_ref from receipts.receipts where order_id = ${orderId}`;
    assert.deepEqual(receipts.map((r) => r.payment_ref), [second.paymentId]);

    await signIn(client);
    const overview = await client.json<{
      refunds: {
        total: number;
        items: { paymentId: string; amountCents: number; keptBy: string }[];
      };
    }>("GET", "/api/console/overview");
    assert.equal(overview.body.refunds.total, 1);
    assert.deepEqual(
      overview.body.refunds.items.map((
        r,
      ) => [r.paymentId, r.amountCents, r.keptBy]),
      [[first.paymentId, totalCents, "orders"]],
    );
  });
});

Deno.test("stripe: a decline with a long reason still reaches the order, its reason cut to what a message carries", async () => {
  await withStripeBakery(async (t, api) => {
    const client = t.client();
    const { orderId, totalCents } = await placeOrderVia(client);
    const { paymentId } = await pay(client, orderId);
    const intent = intentOf(
      api.sessions.get(paymentId)!,
      totalCents,
      "declined",
    );
    const long = "Your card was declined. ".repeat(200);
    const declined = await sendSigned(
      t.url,
      stripeEvent("payment_intent.payment_failed", {
        ...intent,
        last_payment_error: { message: long },
      }),
    );
    assert.equal(declined.status, 200, JSON.stringify(declined.body));
    await orderSettles(client, orderId, "payment_failed");
    const [payment] = await t.at("billing")<{ failure_reason: string }[]>`
      select failure_reason from billing.payments where id = ${paymentId}`;
    assert.equal(payment.failure_reason, long.trim().slice(0, 1000));
  });
});
