/**
 * Payments that do not add up, through HTTP against real PostgreSQL: a
 * charge whose amount or currency is not the order's is kept as a payment
 * that needs a refund and shown to the operator, never left as money taken
 * for an order that stays unpaid without a word; a payment id of another
 * sandbox is a refusal; ten pay requests at once make one payment.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import type { Sql } from "../lib/db/connect.ts";
import {
  type Client,
  countOf,
  eventually,
  orderSettles,
  paymentIntentEvent,
  placeOrderVia,
  postWebhook,
  sentBy,
  signIn,
  TEST_WEBHOOK_SECRET,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

/** A refund due, as `GET /api/console/overview` lists it. */
interface RefundJson {
  paymentId: string;
  orderId: string;
  amountCents: number;
  currency: string | null;
  reason: string;
  at: string;
}

/** An order placed through the API and a payment opened for it. */
async function orderWithOpenPayment(sql: Sql, client: Client) {
  const { orderId, totalCents } = await placeOrderVia(
    client,
    walkthroughOrder(crypto.randomUUID(), "pickup"),
  );
  const { body } = await client.json<{ sandboxId: string }>(
    "GET",
    "/api/session",
  );
  const paymentId = `pi_test_${crypto.randomUUID().slice(0, 8)}`;
  // As the pay request opens it: the order's amount and currency.
  await sql`
    insert into billing.payments
      (id, tenant_id, order_id, amount_cents, currency)
    values (${paymentId}, ${body.sandboxId}, ${orderId}, ${totalCents}, 'eur')`;
  return { orderId, sandboxId: body.sandboxId, paymentId, totalCents };
}

/** Signs and posts a `payment_intent.succeeded`, with `change` applied. */
async function sendSucceeded(
  url: string,
  ids: Awaited<ReturnType<typeof orderWithOpenPayment>>,
  change: { amount?: number; currency?: string } = {},
) {
  const event = paymentIntentEvent({ ...ids, amountCents: ids.totalCents });
  Object.assign(event.data.object, change);
  const payload = JSON.stringify(event);
  const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret: TEST_WEBHOOK_SECRET,
  });
  return await postWebhook(url, payload, signature);
}

async function refundsOf(client: Client): Promise<RefundJson[]> {
  const { status, body } = await client.json<
    { refunds: { items: RefundJson[] } }
  >("GET", "/api/console/overview");
  assert.equal(status, 200, JSON.stringify(body));
  return body.refunds.items;
}

Deno.test("payments: a charge of another amount or currency is a refund due, shown to the operator; the order stays unpaid and is not told it was paid", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const client = t.client();
    await signIn(client, "Operator");
    const short = await orderWithOpenPayment(sql, client);
    const dollars = await orderWithOpenPayment(sql, client);

    const answers = [
      await sendSucceeded(t.url, short, { amount: 1 }),
      await sendSucceeded(t.url, dollars, { currency: "usd" }),
    ];
    for (const a of answers) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.match(String(a.body.outcome), /^refund due: /);
    }
    const payments = await sql`
      select id, state, refund_reason from billing.payments order by created_at`;
    assert.deepEqual(payments.map((p) => [p.id, p.state, p.refund_reason]), [
      [
        short.paymentId,
        "refund_due",
        `charged 1 eur, the order is ${short.totalCents} eur`,
      ],
      [
        dollars.paymentId,
        "refund_due",
        `charged ${dollars.totalCents} usd, the order is ${dollars.totalCents} eur`,
      ],
    ]);
    // No PaymentSucceeded: the orders service was never told it was paid.
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(sql, "billing")} o`),
      0,
    );
    for (const ids of [short, dollars]) {
      const order = await orderSettles(client, ids.orderId, "placed");
      assert.deepEqual(order.events.map((e) => e.type), ["OrderPlaced"]);
    }

    // The operator sees both, in the JSON twin and on the overview page.
    const refunds = await refundsOf(client);
    assert.deepEqual(
      refunds.map((r) => [r.paymentId, r.orderId, r.amountCents, r.currency])
        .sort(),
      [
        [short.paymentId, short.orderId, 1, "eur"],
        [dollars.paymentId, dollars.orderId, dollars.totalCents, "usd"],
      ].sort(),
    );
    const page = await client.fetch("/console");
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /Payments needing a refund/);
    assert.ok(html.includes(short.paymentId), "the page names the payment");

    // A charge for a payment no pay request opened: money taken for
    // nothing asked, kept for a refund too.
    const unasked = { ...short, paymentId: "pi_test_never_opened" };
    const stray = await sendSucceeded(t.url, unasked);
    assert.equal(stray.status, 200);
    assert.equal(
      stray.body.outcome,
      "refund due: billing opened no payment for this charge; PaymentSucceeded not sent",
    );
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(sql, "billing")} o`),
      0,
    );
    assert.equal((await refundsOf(client)).length, 3);

    // The same event again changes nothing.
    const again = await sendSucceeded(t.url, short, { amount: 1 });
    assert.equal(again.status, 200);
    assert.equal((await refundsOf(client)).length, 3);
  });
});

Deno.test("payments: a payment that reached a cancelled order is listed for a refund beside billing's own", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const client = t.client();
    await signIn(client, "Operator");
    const ids = await orderWithOpenPayment(sql, client);
    const cancel = await client.json(
      "POST",
      `/api/orders/${ids.orderId}/cancel`,
    );
    assert.equal(cancel.status, 202);
    await orderSettles(client, ids.orderId, "cancelled");
    const answer = await sendSucceeded(t.url, ids);
    assert.equal(answer.status, 200);
    await eventually(
      "the refund listed",
      async () => (await refundsOf(client)).length === 1,
    );
    const [refund] = await refundsOf(client);
    assert.deepEqual(
      [refund.paymentId, refund.orderId, refund.amountCents],
      [ids.paymentId, ids.orderId, ids.totalCents],
    );
    assert.match(refund.reason, /cancelled/);
  });
});

Deno.test("payments: a payment id of another sandbox is a 422 and a recorded refusal, not a 500", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const theirs = await orderWithOpenPayment(sql, t.client());
    const client = t.client();
    const ours = await orderWithOpenPayment(sql, client);

    // Signed by Stripe, naming our sandbox and order, and their payment.
    const forged = { ...ours, paymentId: theirs.paymentId };
    // Twice: the repeat gets the same answer and records nothing more.
    for (let i = 0; i < 2; i++) {
      const event = paymentIntentEvent({
        ...forged,
        amountCents: ours.totalCents,
        eventId: "evt_test_cross_sandbox",
      });
      const payload = JSON.stringify(event);
      const answer = await postWebhook(
        t.url,
        payload,
        await Stripe.webhooks.generateTestHeaderStringAsync({
          payload,
          secret: TEST_WEBHOOK_SECRET,
        }),
      );
      assert.equal(answer.status, 422, JSON.stringify(answer.body));
      assert.match(
        String(answer.body.error),
        new RegExp(`^refused: payment ${theirs.paymentId} is not a payment`),
      );
    }
    const [recorded] = await sql`
      select tenant_id, payment_id, order_id, status, outcome
        from billing.stripe_events`;
    assert.deepEqual(
      [recorded.tenant_id, recorded.payment_id, recorded.order_id],
      [ours.sandboxId, theirs.paymentId, ours.orderId],
    );
    assert.equal(recorded.status, 422);
    assert.match(recorded.outcome, /^refused: /);
    // Their payment, and both orders, are as they were.
    const payments = await sql`
      select id, tenant_id, state from billing.payments order by id`;
    assert.deepEqual(
      payments.map((p) => [p.id, p.tenant_id, p.state]).sort(),
      [
        [theirs.paymentId, theirs.sandboxId, "pending"],
        [ours.paymentId, ours.sandboxId, "pending"],
      ].sort(),
    );
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(sql, "billing")} o`),
      0,
    );
  });
});

Deno.test("payments: ten pay requests at once for one order make one payment", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        client.json<{ paymentId: string }>(
          "POST",
          `/api/orders/${orderId}/pay`,
          { card: "4242424242424242" },
        )),
    );
    assert.deepEqual(answers.map((a) => a.status), Array(10).fill(202));
    const ids = new Set(answers.map((a) => a.body.paymentId));
    assert.equal(ids.size, 1, `payment ids: ${[...ids].join(", ")}`);
    const [paymentId] = ids;

    const order = await orderSettles(client, orderId, "paid");
    assert.equal(order.paymentRef, paymentId);
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "OrderPaid",
    ]);
    const payments = await sql`select id, state from billing.payments`;
    assert.deepEqual(payments.map((p) => [p.id, p.state]), [
      [paymentId, "succeeded"],
    ]);
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from billing.stripe_events`),
      1,
    );
    // Paid: one more request is a conflict, not a second charge.
    const late = await client.json("POST", `/api/orders/${orderId}/pay`, {
      card: "4242424242424242",
    });
    assert.equal(late.status, 409);
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from billing.payments`),
      1,
    );
  });
});
