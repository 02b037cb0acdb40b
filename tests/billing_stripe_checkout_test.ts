/**
 * With real Stripe keys: the Checkout session is created under the
 * payment's id as Stripe's idempotency key, so a crash between creating it
 * and keeping its URL gets the same session back on the next pay request;
 * and `checkout.session.expired` closes the payment so that the order can
 * be paid again. The stripe library talks to a server on loopback that
 * answers as Stripe's API does (one session per idempotency key); the
 * expired event is signed with the library's own test helper and goes
 * through the webhook's real verification. Nothing reaches the network.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import { handleStripeWebhook } from "../services/billing/webhook.ts";
import { countOf, sentBy, TEST_WEBHOOK_SECRET } from "./_app.ts";
import { withTestDatabase } from "./_db.ts";
import { stripeApi } from "./_stripe_api.ts";

const order = () => ({
  sandboxId: crypto.randomUUID(),
  orderId: crypto.randomUUID(),
  amountCents: 1250,
  returnUrl: "http://127.0.0.1/orders/x",
});

Deno.test("stripe: a session created but not kept is asked for again under the payment's id, and the same session comes back", async () => {
  await withTestDatabase(async (db) => {
    const api = stripeApi();
    try {
      const gateway = api.gateway(db.sql);
      const request = order();
      api.state.dropNext = true;
      await assert.rejects(() => gateway.pay(request), /Stripe did not answer/);
      const [pending] = await db.sql<
        { id: string; state: string; checkout_url: string | null }[]
      >`select id, state, checkout_url from billing.payments
         where order_id = ${request.orderId}`;
      assert.equal(pending.state, "pending");
      assert.equal(pending.checkout_url, null);

      const again = await gateway.pay(request);
      assert.equal(again.paymentId, pending.id);
      assert.equal(api.sessions.size, 1);
      const session = api.sessions.get(pending.id)!;
      assert.equal(again.checkoutUrl, session.url);
      assert.deepEqual(
        api.seen.map((s) => s.idempotencyKey),
        [pending.id, pending.id],
      );
      assert.equal(api.seen[0].form.get("metadata[paymentId]"), pending.id);

      // Kept now: a third request is answered from billing, not Stripe.
      const third = await gateway.pay(request);
      assert.equal(third.checkoutUrl, session.url);
      assert.equal(api.seen.length, 2);
      assert.equal(
        await countOf(db.sql`select count(*)::int as n from billing.payments`),
        1,
      );
    } finally {
      await api.stop();
    }
  });
});

Deno.test("stripe: checkout.session.expired closes the payment, and the order can be paid with a new checkout", async () => {
  await withTestDatabase(async (db) => {
    const api = stripeApi();
    try {
      const gateway = api.gateway(db.sql);
      const request = order();
      const first = await gateway.pay(request);
      const session = api.sessions.get(first.paymentId)!;
      const event = {
        id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
        object: "event",
        type: "checkout.session.expired",
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        data: { object: { ...session, status: "expired" } },
      };
      const payload = JSON.stringify(event);
      const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
        payload,
        secret: TEST_WEBHOOK_SECRET,
      });
      const outcome = await handleStripeWebhook(
        db.sql,
        TEST_WEBHOOK_SECRET,
        payload,
        signature,
      );
      assert.equal(outcome.status, 200);
      const [closed] = await db.sql<
        { state: string; failure_reason: string }[]
      >`select state, failure_reason from billing.payments
         where id = ${first.paymentId}`;
      assert.equal(closed.state, "failed");
      assert.match(closed.failure_reason, /expired/);
      // The orders service hears of it as of a declined card.
      const [sent] = await db.sql<{ type: string }[]>`
        select envelope->>'type' as type from ${sentBy(db.sql, "billing")} o
         where envelope->>'aggregateId' = ${request.orderId}`;
      assert.equal(sent.type, "PaymentFailed");

      const second = await gateway.pay(request);
      assert.notEqual(second.paymentId, first.paymentId);
      assert.notEqual(second.checkoutUrl, first.checkoutUrl);
      assert.equal(api.sessions.size, 2);

      // The same event again changes nothing.
      const repeat = await handleStripeWebhook(
        db.sql,
        TEST_WEBHOOK_SECRET,
        payload,
        signature,
      );
      assert.equal(repeat.duplicate, true);
      const [open] = await db.sql<{ state: string }[]>`
        select state from billing.payments where id = ${second.paymentId}`;
      assert.equal(open.state, "pending");
    } finally {
      await api.stop();
    }
  });
});
