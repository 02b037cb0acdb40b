/**
 * Billing writes a Stripe event's outcome with the COMMIT, without waiting
 * for it first (services/billing/payments.ts). Should that last write fail,
 * nothing of the event stays: the payment is as it was, no message is owed,
 * the event has no row, and the error is the write's own. The event sent
 * again then settles the payment as the first time would have.
 */
import assert from "node:assert/strict";
import { placeOrderVia, sentBy } from "./_app.ts";
import { intentOf, stripeEvent, withStripeBakery } from "./_stripe_api.ts";
import {
  recordStripeEvent,
  stripeEventSchema,
} from "../services/billing/payments.ts";

Deno.test("stripe: an event whose outcome cannot be written changes nothing, and says why", async () => {
  await withStripeBakery(async (t, api) => {
    const billing = t.at("billing");
    const client = t.client();
    const { orderId, totalCents } = await placeOrderVia(client);
    const { status, body } = await client.json<{ paymentId: string }>(
      "POST",
      `/api/orders/${orderId}/pay`,
      {},
    );
    assert.equal(status, 202, JSON.stringify(body));
    const event = stripeEventSchema.parse(stripeEvent(
      "payment_intent.succeeded",
      intentOf(api.sessions.get(body.paymentId)!, totalCents, "succeeded"),
    ));

    // The test's fault: the event's row takes its insert, not its outcome.
    await t.sql`
        create function billing.refuse_outcome() returns trigger
        language plpgsql as $$
        begin
          raise exception 'the outcome was refused by the test';
        end $$`;
    await t.sql`
        create trigger refuse_outcome before update on billing.stripe_events
        for each row execute function billing.refuse_outcome()`;
    await assert.rejects(
      recordStripeEvent(t.sql, event),
      /the outcome was refused by the test/,
    );
    const [payment] = await billing<{ state: string }[]>`
        select state from billing.payments where id = ${body.paymentId}`;
    assert.equal(payment.state, "pending");
    const events = await billing`
        select 1 from billing.stripe_events where event_id = ${event.id}`;
    assert.equal(events.length, 0, "no row for an event that failed");
    const owed = await billing`
        select 1 from ${sentBy(billing, "billing")} o
         where envelope->>'aggregateId' = ${orderId}`;
    assert.equal(owed.length, 0, "no PaymentSucceeded for a rollback");

    await t.sql`drop trigger refuse_outcome on billing.stripe_events`;
    const again = await recordStripeEvent(t.sql, event);
    assert.deepEqual(again, {
      duplicate: false,
      outcome: "payment succeeded; PaymentSucceeded sent",
      status: 200,
    });
    const [settled] = await billing<{ state: string }[]>`
        select state from billing.payments where id = ${body.paymentId}`;
    assert.equal(settled.state, "succeeded");
  });
});
