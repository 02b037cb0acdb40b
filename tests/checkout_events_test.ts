/**
 * The test checkout's events are kept until the webhook takes them: a
 * webhook that refuses for longer than the old five in-memory tries still
 * gets the event, once; an event past its last retry is a row the console
 * lists, and an operator can send it again.
 */
import assert from "node:assert/strict";
import { CheckoutSender } from "../services/billing/checkout_events.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import {
  countOf,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  TEST_WEBHOOK_SECRET,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";

/**
 * A webhook endpoint in front of the bakery's: it answers 503 while
 * `refusing` is true and passes the post on otherwise, counting both.
 */
function refusingEndpoint(target: string) {
  const seen = { refused: 0, passed: 0, refusing: true };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      if (seen.refusing) {
        seen.refused++;
        return new Response("down for maintenance", { status: 503 });
      }
      seen.passed++;
      return await fetch(new URL("/webhooks/stripe", target), {
        method: "POST",
        headers: request.headers,
        body: await request.text(),
      });
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}/webhooks/stripe`,
    stop: () => server.shutdown(),
  };
}

/**
 * Runs `fn` with the bakery's own sender stopped and one of the test's in
 * its place, posting through `endpoint` with `retryDelaysMs`.
 */
async function withSender(
  t: TestBakery,
  endpoint: string,
  retryDelaysMs: number[],
  fn: (sender: CheckoutSender) => Promise<void>,
) {
  await t.bakery.deps.gateway.stop();
  const sender = new CheckoutSender({
    sql: t.sql,
    log: memoryLogger("error").logger,
    webhookSecret: TEST_WEBHOOK_SECRET,
    webhookUrl: () => endpoint,
    pollMs: 50,
    retryDelaysMs,
  });
  sender.start();
  try {
    await fn(sender);
  } finally {
    await sender.stop();
  }
}

async function eventRow(t: TestBakery, paymentId: string) {
  const [row] = await t.at("billing")<
    { state: string; attempts: number; last_status: number | null }[]
  >`select state, attempts, last_status from billing.checkout_events
     where payment_id = ${paymentId}`;
  return row;
}

Deno.test("checkout: a webhook that refuses longer than five tries still gets the event, and applies it once", async () => {
  await withTestBakery(async (t) => {
    const endpoint = refusingEndpoint(t.url);
    try {
      await withSender(t, endpoint.url, Array(12).fill(20), async () => {
        const client = t.client();
        await signIn(client, "Refused webhook");
        const { orderId } = await placeOrderVia(client);
        const { paymentId } = await payVia(client, orderId);
        await eventually(
          "eight refused posts",
          () => Promise.resolve(endpoint.seen.refused >= 8),
        );
        assert.equal((await eventRow(t, paymentId)).state, "pending");
        endpoint.seen.refusing = false;
        const order = await orderSettles(client, orderId, "paid");
        assert.equal(
          order.events.filter((e) => e.type === "OrderPaid").length,
          1,
        );
        const row = await eventRow(t, paymentId);
        assert.equal(row.state, "delivered");
        assert.equal(row.last_status, 200);
        assert.equal(row.attempts, endpoint.seen.refused + 1);
        assert.equal(endpoint.seen.passed, 1);
        assert.equal(
          await countOf(
            t.at("billing")`select count(*)::int as n from billing.stripe_events
                               where payment_id = ${paymentId}`,
          ),
          1,
        );
        assert.equal(
          await countOf(t.at("receipts")`
            select count(*)::int as n from receipts.receipts
             where order_id = ${orderId}`),
          1,
        );
      });
    } finally {
      await endpoint.stop();
    }
  });
});

Deno.test("checkout: an event past its last retry is a row the console lists, and sending it again pays the order", async () => {
  await withTestBakery(async (t) => {
    const endpoint = refusingEndpoint(t.url);
    try {
      await withSender(t, endpoint.url, [20, 20], async (sender) => {
        const client = t.client();
        await signIn(client, "Given up");
        const { orderId } = await placeOrderVia(client);
        const { paymentId } = await payVia(client, orderId);
        await eventually(
          "the event to give up",
          async () => (await eventRow(t, paymentId))?.state === "gave_up",
        );
        assert.equal(endpoint.seen.refused, 3);
        const listed = await client.json<
          { total: number; items: Record<string, unknown>[] }
        >("GET", "/api/console/checkout-events");
        assert.equal(listed.status, 200);
        assert.equal(listed.body.total, 1);
        assert.equal(listed.body.items[0].state, "gave_up");
        assert.equal(listed.body.items[0].orderId, orderId);
        assert.equal(listed.body.items[0].paymentId, paymentId);
        assert.equal(listed.body.items[0].lastStatus, 503);
        const overview = await client.json<
          { checkoutEvents: { total: number } }
        >("GET", "/api/console/overview");
        assert.equal(overview.body.checkoutEvents.total, 1);
        // The order page still says placed: nothing pretends it was paid.
        const order = await client.json<{ state: string }>(
          "GET",
          `/api/orders/${orderId}`,
        );
        assert.equal(order.body.state, "placed");

        // Another sandbox neither sees nor sends it.
        const other = t.client();
        await signIn(other, "Someone else");
        const eventId = listed.body.items[0].eventId as string;
        const theirs = await other.json<{ total: number }>(
          "GET",
          "/api/console/checkout-events",
        );
        assert.equal(theirs.body.total, 0);
        const stolen = await other.json(
          "POST",
          `/api/console/checkout-events/${eventId}/send-again`,
        );
        assert.equal(stolen.status, 404);
        const bad = await client.json(
          "POST",
          "/api/console/checkout-events/not-an-id/send-again",
        );
        assert.equal(bad.status, 400);

        endpoint.seen.refusing = false;
        const again = await client.json(
          "POST",
          `/api/console/checkout-events/${eventId}/send-again`,
        );
        assert.equal(again.status, 202);
        sender.wake();
        await orderSettles(client, orderId, "paid");
        const row = await eventRow(t, paymentId);
        assert.equal(row.state, "delivered");
        const [resent] = await t.at("billing")<{ resent_by: string }[]>`
          select resent_by from billing.checkout_events
           where payment_id = ${paymentId}`;
        assert.equal(resent.resent_by, "Given up");
      });
    } finally {
      await endpoint.stop();
    }
  });
});

Deno.test("checkout: paying again while the payment is open sends no second event", async () => {
  await withTestBakery(async (t) => {
    const endpoint = refusingEndpoint(t.url);
    try {
      await withSender(t, endpoint.url, Array(50).fill(20), async () => {
        const client = t.client();
        await signIn(client, "Pays twice");
        const { orderId } = await placeOrderVia(client);
        const first = await payVia(client, orderId);
        const second = await payVia(client, orderId);
        assert.equal(second.paymentId, first.paymentId);
        assert.equal(
          await countOf(t.at("billing")`select count(*)::int as n
                                from billing.checkout_events`),
          1,
        );
        endpoint.seen.refusing = false;
        await orderSettles(client, orderId, "paid");
        assert.equal(endpoint.seen.passed, 1);
      });
    } finally {
      await endpoint.stop();
    }
  });
});
