/**
 * `POST /webhooks/stripe`: a verified event is recorded once however often
 * and however concurrently Stripe sends it; an unverifiable one is a 400 and
 * changes nothing.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import type { Sql } from "../lib/db/connect.ts";
import {
  type Client,
  countOf,
  orderSettles,
  paymentIntentEvent,
  placeOrderVia,
  postWebhook,
  sentBy,
  TEST_WEBHOOK_SECRET,
  withTestBakery,
} from "./_app.ts";

/** An order placed through the API and a pending payment for it. */
async function orderWithPendingPayment(sql: Sql, client: Client) {
  const { orderId, totalCents } = await placeOrderVia(client);
  const session = await client.json<{ sandboxId: string }>(
    "GET",
    "/api/session",
  );
  assert.equal(session.status, 200);
  const { sandboxId } = session.body;
  const paymentId = `pi_test_${crypto.randomUUID().slice(0, 8)}`;
  await sql`
    insert into billing.payments (id, tenant_id, order_id, amount_cents)
    values (${paymentId}, ${sandboxId}, ${orderId}, ${totalCents})`;
  return { orderId, sandboxId, paymentId, totalCents };
}

/** The `payment_intent.succeeded` event of that pending payment. */
const succeededEvent = (
  ids: Awaited<ReturnType<typeof orderWithPendingPayment>>,
) =>
  paymentIntentEvent({
    sandboxId: ids.sandboxId,
    orderId: ids.orderId,
    paymentId: ids.paymentId,
    amountCents: ids.totalCents,
  });

const sign = (
  payload: string,
  extra: { secret?: string; timestamp?: number } = {},
) =>
  Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret: extra.secret ?? TEST_WEBHOOK_SECRET,
    ...(extra.timestamp === undefined ? {} : { timestamp: extra.timestamp }),
  });

Deno.test("webhook: one event sent five times at once is applied once", async () => {
  await withTestBakery(async (t) => {
    const billing = t.at("billing");
    const orders = t.at("orders");
    const client = t.client();
    const ids = await orderWithPendingPayment(billing, client);
    const event = succeededEvent(ids);
    const payload = JSON.stringify(event);
    const signature = await sign(payload);

    const answers = await Promise.all(
      Array.from({ length: 5 }, () => postWebhook(t.url, payload, signature)),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    assert.deepEqual(
      answers.map((a) => a.body.duplicate).sort(),
      [false, true, true, true, true],
    );

    const order = await orderSettles(client, ids.orderId, "paid", 5_000);
    assert.equal(order.paymentRef, ids.paymentId);
    assert.deepEqual(
      order.events.map((e) => e.type),
      ["OrderPlaced", "OrderPaid"],
    );

    // Once more, late and alone: still a 200, still nothing new.
    const late = await postWebhook(t.url, payload, signature);
    assert.equal(late.status, 200);
    assert.equal(late.body.duplicate, true);

    const n = (query: PromiseLike<{ n: number }[]>) => countOf(query);
    assert.equal(
      await n(billing`select count(*)::int as n from billing.stripe_events`),
      1,
    );
    const [recorded] = await billing`
      select event_id, payment_id, order_id, outcome from billing.stripe_events`;
    assert.deepEqual(
      [recorded.event_id, recorded.payment_id, recorded.order_id],
      [event.id, ids.paymentId, ids.orderId],
    );
    assert.match(recorded.outcome, /PaymentSucceeded sent/);
    assert.equal(
      await n(billing`
        select count(*)::int as n from ${sentBy(billing, "billing")} o
         where type = 'PaymentSucceeded'`),
      1,
    );
    assert.equal(
      await n(orders`
        select count(*)::int as n from ${sentBy(orders, "orders")} o
         where type = 'OrderPaid'`),
      1,
    );
    assert.equal(
      await n(orders`select count(*)::int as n from orders.events
                   where order_id = ${ids.orderId} and type = 'OrderPaid'`),
      1,
    );
    assert.equal(
      await n(orders`select count(*)::int as n from queue.messages
                   where type = 'OrderPaid'`),
      1,
    );
    const [row] = await orders`
      select state, version, payment_ref from orders.orders where id = ${ids.orderId}`;
    assert.deepEqual([row.state, row.version, row.payment_ref], [
      "paid",
      2,
      ids.paymentId,
    ]);
    const [payment] = await billing`
      select state from billing.payments where id = ${ids.paymentId}`;
    assert.equal(payment.state, "succeeded");
    const [card] = await t.at("kitchen")`
      select state from kitchen.cards where order_id = ${ids.orderId}`;
    assert.equal(card.state, "confirmed");
    assert.equal(
      await n(t.at("receipts")`
        select count(*)::int as n from receipts.receipts`),
      1,
    );
  });
});

Deno.test("webhook: unverifiable events are a 400 and record nothing", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const client = t.client();
    const ids = await orderWithPendingPayment(sql, client);
    const event = succeededEvent(ids);
    const payload = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);

    const recorded = async () => ({
      stripeEvents: await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from billing.stripe_events`),
      billingOutbox: await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(sql, "billing")} o`),
      payment: (await sql`
        select state, updated_at from billing.payments where id = ${ids.paymentId}`)
        .map((p) => `${p.state} ${p.updated_at.toISOString()}`)[0],
    });
    const before = await recorded();
    assert.equal(before.stripeEvents, 0);
    assert.match(before.payment, /^pending /);

    const tampered = JSON.stringify({
      ...event,
      data: { object: { ...event.data.object, amount: 1 } },
    });
    const cases: [string, string, string | null, RegExp][] = [
      [
        "a valid signature of another body",
        tampered,
        await sign(payload),
        /signature/,
      ],
      [
        "a signature made with another secret",
        payload,
        await sign(payload, { secret: "whsec_not_the_bakery_secret" }),
        /signature/,
      ],
      [
        "a timestamp 301 s old",
        payload,
        await sign(payload, { timestamp: now - 301 }),
        /timestamp|tolerance/i,
      ],
      ["no Stripe-Signature header", payload, null, /Stripe-Signature/],
      ["a malformed header", payload, "t=1,v1=00", /signature/],
      [
        "a signed body that is not a Stripe event",
        '{"hello":"world"}',
        await sign('{"hello":"world"}'),
        /not a Stripe event/,
      ],
    ];
    for (const [what, body, signature, error] of cases) {
      const answer = await postWebhook(t.url, body, signature);
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer)}`);
      assert.match(String(answer.body.error), error, what);
      assert.deepEqual(await recorded(), before, what);
    }

    // The same event, properly signed (and 280 s old, inside the window),
    // is accepted: the refusals above were about the signature alone.
    const good = await postWebhook(
      t.url,
      payload,
      await sign(payload, { timestamp: now - 280 }),
    );
    assert.equal(good.status, 200, JSON.stringify(good.body));
    assert.equal(good.body.duplicate, false);
    await orderSettles(client, ids.orderId, "paid", 5_000);
    const after = await recorded();
    assert.equal(after.stripeEvents, 1);
    assert.match(after.payment, /^succeeded /);
  });
});

Deno.test("webhook: another event for a settled payment changes nothing", async () => {
  await withTestBakery(async (t) => {
    const sql = t.at("billing");
    const client = t.client();
    const ids = await orderWithPendingPayment(sql, client);
    const base = {
      sandboxId: ids.sandboxId,
      orderId: ids.orderId,
      paymentId: ids.paymentId,
      amountCents: ids.totalCents,
    };
    const send = async (event: ReturnType<typeof paymentIntentEvent>) => {
      const payload = JSON.stringify(event);
      return await postWebhook(t.url, payload, await sign(payload));
    };
    const first = await send(paymentIntentEvent(base));
    assert.equal(first.status, 200);
    await orderSettles(client, ids.orderId, "paid", 5_000);

    // Stripe may send other events about the same payment: a second
    // success under a new event id, or a late failure.
    const late = [
      await send(paymentIntentEvent(base)),
      await send(
        paymentIntentEvent({ ...base, type: "payment_intent.payment_failed" }),
      ),
    ];
    for (const answer of late) {
      assert.equal(answer.status, 200);
      assert.equal(answer.body.duplicate, false);
      assert.match(String(answer.body.outcome), /^late: /);
    }
    const events = await sql`
      select outcome from billing.stripe_events order by received_at`;
    assert.equal(events.length, 3);
    assert.equal(
      await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sentBy(sql, "billing")} o`),
      1,
    );
    const [payment] = await sql`
      select state, failure_reason from billing.payments where id = ${ids.paymentId}`;
    assert.deepEqual([payment.state, payment.failure_reason], [
      "succeeded",
      null,
    ]);
    const order = await orderSettles(client, ids.orderId, "paid");
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "OrderPaid",
    ]);
  });
});

Deno.test("webhook: other payments of a paid order change nothing but are kept for a refund", async () => {
  await withTestBakery(async (t) => {
    const billing = t.at("billing");
    const orders = t.at("orders");
    const client = t.client();
    const ids = await orderWithPendingPayment(billing, client);
    // The visitor paid in two tabs: two more payments are open.
    const [declined, extra] = ["declined", "extra"].map((p) =>
      `pi_test_${p}_${crypto.randomUUID().slice(0, 8)}`
    );
    for (const id of [declined, extra]) {
      await billing`
        insert into billing.payments (id, tenant_id, order_id, amount_cents)
        values (${id}, ${ids.sandboxId}, ${ids.orderId}, ${ids.totalCents})`;
    }
    const send = async (paymentId: string, failed = false) => {
      const payload = JSON.stringify(paymentIntentEvent({
        sandboxId: ids.sandboxId,
        orderId: ids.orderId,
        paymentId,
        amountCents: ids.totalCents,
        type: failed
          ? "payment_intent.payment_failed"
          : "payment_intent.succeeded",
      }));
      const answer = await postWebhook(t.url, payload, await sign(payload));
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    };

    await send(ids.paymentId);
    await orderSettles(client, ids.orderId, "paid", 5_000);

    // A late decline of the second tab: billing records it, orders keeps
    // the order paid.
    assert.match(String((await send(declined, true)).outcome), /failed/);
    let order = await orderSettles(client, ids.orderId, "paid", 5_000);
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "OrderPaid",
    ]);

    // A success of the third: kept as a second payment that needs a refund.
    await send(extra);
    order = await orderSettles(client, ids.orderId, "paid", 5_000);
    assert.deepEqual(order.events.map((e) => [e.type, e.version]), [
      ["OrderPlaced", 1],
      ["OrderPaid", 2],
      ["SecondPaymentReceived", 2],
    ]);
    assert.equal(order.paymentRef, ids.paymentId);
    const payments = await billing`
      select id, state from billing.payments order by id`;
    assert.deepEqual(
      Object.fromEntries(payments.map((p) => [p.id, p.state])),
      {
        [ids.paymentId]: "succeeded",
        [declined]: "failed",
        [extra]: "succeeded",
      },
    );
    const [refund] = await orders`
      select payload from orders.events where type = 'SecondPaymentReceived'`;
    assert.deepEqual(refund.payload, {
      paymentId: extra,
      amountCents: ids.totalCents,
      action: "refund",
    });
    // The receivers heard of one payment only.
    assert.equal(
      await countOf(orders<{ n: number }[]>`
        select count(*)::int as n from queue.messages where type = 'OrderPaid'`),
      1,
    );
    const [receipt] = await t.at("receipts")`
      select payment_ref from receipts.receipts`;
    assert.equal(receipt.payment_ref, ids.paymentId);
  });
});
