/**
 * An order can hold an older payment that is still open when a newer one
 * is made (a Checkout session lives a day; a pay request after that opens
 * another). When the older one then fails, the order is not told: it stays
 * awaiting payment, and the newer payment settles it.
 */
import assert from "node:assert/strict";
import { orderSettles, placeOrderVia, sentBy } from "./_app.ts";
import {
  intentOf,
  sendSigned,
  stripeEvent,
  withStripeBakery,
} from "./_stripe_api.ts";

Deno.test("stripe: an older payment's failure, while a newer one is open, leaves the order awaiting payment", async () => {
  await withStripeBakery(async (t, api) => {
    const billing = t.at("billing");
    const client = t.client();
    const { orderId, totalCents } = await placeOrderVia(client);
    const pay = async () => {
      const { status, body } = await client.json<{ paymentId: string }>(
        "POST",
        `/api/orders/${orderId}/pay`,
        {},
      );
      assert.equal(status, 202, JSON.stringify(body));
      return body.paymentId;
    };
    const older = await pay();
    await billing`
        update billing.payments set created_at = now() - interval '25 hours'
         where id = ${older}`;
    const newer = await pay();
    assert.notEqual(newer, older);

    // The older session expires now, a day after it was made.
    const expired = await sendSigned(
      t.url,
      stripeEvent("checkout.session.expired", {
        ...api.sessions.get(older)!,
        status: "expired",
      }),
    );
    assert.equal(expired.status, 200);
    assert.match(
      String(expired.body.outcome),
      new RegExp(
        `PaymentFailed not sent, payment ${newer} is the order's current one`,
      ),
    );
    const states = await billing<{ id: string; state: string }[]>`
        select id, state from billing.payments where order_id = ${orderId}
         order by created_at`;
    assert.deepEqual(states.map((p) => [p.id, p.state]), [
      [older, "failed"],
      [newer, "pending"],
    ]);
    // Nothing was sent, so nothing is on its way to the order.
    const sent = await billing<{ type: string }[]>`
        select envelope->>'type' as type from ${sentBy(billing, "billing")} o
         where envelope->>'aggregateId' = ${orderId}`;
    assert.equal(sent.length, 0);
    const waiting = await orderSettles(client, orderId, "placed");
    assert.deepEqual(waiting.events.map((e) => e.type), ["OrderPlaced"]);

    await sendSigned(
      t.url,
      stripeEvent(
        "payment_intent.succeeded",
        intentOf(api.sessions.get(newer)!, totalCents, "succeeded"),
      ),
    );
    const paid = await orderSettles(client, orderId, "paid");
    assert.equal(paid.paymentRef, newer);
    assert.deepEqual(paid.events.map((e) => e.type), [
      "OrderPlaced",
      "OrderPaid",
    ]);
  });
});
