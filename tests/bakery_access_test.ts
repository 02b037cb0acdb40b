/**
 * Who may do what to an order: no cancel once paid, another sandbox sees
 * nothing (404), and a state-changing request needs a same-site Origin or
 * the session's X-CSRF-Token (403 otherwise, and nothing written).
 */
import assert from "node:assert/strict";
import {
  Client,
  orderSettles,
  placeOrderVia,
  rowCounts,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

async function send(
  client: Client,
  method: string,
  path: string,
  options: { json?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await client.fetch(path, { method, ...options });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

Deno.test("access: a paid order cannot be cancelled (409)", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    const pay = await client.json("POST", `/api/orders/${orderId}/pay`, {
      card: "4242424242424242",
    });
    assert.equal(pay.status, 202);
    await orderSettles(client, orderId, "paid", 5_000);
    const before = await rowCounts(t.sql);

    const cancel = await client.json<{ error: string }>(
      "POST",
      `/api/orders/${orderId}/cancel`,
    );
    assert.equal(cancel.status, 409);
    assert.match(cancel.body.error, /paid/);
    assert.deepEqual(await rowCounts(t.sql), before);
    const order = await orderSettles(client, orderId, "paid");
    assert.deepEqual(order.events.map((e) => e.type), [
      "OrderPlaced",
      "OrderPaid",
    ]);
    const [card] = await t.at("kitchen")`
      select state from kitchen.cards where order_id = ${orderId}`;
    assert.equal(card.state, "confirmed");

    // Paying a paid order again is a 409 too, and opens no payment.
    const again = await client.json("POST", `/api/orders/${orderId}/pay`, {
      card: "4242424242424242",
    });
    assert.equal(again.status, 409);
    assert.deepEqual(await rowCounts(t.sql), before);
  });
});

Deno.test("access: another sandbox can neither read nor cancel nor pay an order (404)", async () => {
  await withTestBakery(async (t) => {
    const owner = t.client();
    const { orderId } = await placeOrderVia(owner);
    // A second visitor, with a guest session and an order of its own.
    const other = t.client();
    const own = await placeOrderVia(other);
    const before = await rowCounts(t.sql);

    for (
      const [method, path, json] of [
        ["GET", `/api/orders/${orderId}`, undefined],
        ["POST", `/api/orders/${orderId}/cancel`, undefined],
        ["POST", `/api/orders/${orderId}/pay`, { card: "4242424242424242" }],
      ] as const
    ) {
      const answer = await other.json<{ error: string }>(method, path, json);
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.ok(!JSON.stringify(answer.body).includes("Ada Baker"));
    }
    assert.deepEqual(await rowCounts(t.sql), before);

    // Each still reaches its own order.
    const mine = await owner.json<{ state: string }>(
      "GET",
      `/api/orders/${orderId}`,
    );
    assert.deepEqual([mine.status, mine.body.state], [200, "placed"]);
    const theirs = await other.json("GET", `/api/orders/${own.orderId}`);
    assert.equal(theirs.status, 200);
    const swapped = await owner.json("GET", `/api/orders/${own.orderId}`);
    assert.equal(swapped.status, 404);
  });
});

Deno.test("access: without a same-site Origin or X-CSRF-Token a change is a 403", async () => {
  await withTestBakery(async (t) => {
    const browser = t.client();
    const { orderId } = await placeOrderVia(browser);
    const before = await rowCounts(t.sql);

    // No cookie, no Origin: not even a guest session is opened.
    const stranger = new Client(t.url, null);
    const anonymous = await send(stranger, "POST", "/api/orders", {
      json: walkthroughOrder(),
    });
    assert.equal(anonymous.status, 403);
    assert.match(anonymous.body.error, /X-CSRF-Token/);
    assert.equal(stranger.cookie("bakery_session"), undefined);

    // The session's cookie, but no Origin and no token (a script elsewhere).
    const script = browser.withOrigin(null);
    const session = await browser.json<{ csrfToken: string }>(
      "GET",
      "/api/session",
    );
    assert.equal(session.status, 200);
    const token = session.body.csrfToken;
    const refused = [
      await send(script, "POST", "/api/orders", { json: walkthroughOrder() }),
      await send(script, "POST", `/api/orders/${orderId}/cancel`),
      await send(script, "POST", `/api/orders/${orderId}/pay`, {
        json: { card: "4242424242424242" },
      }),
      await send(script, "POST", "/api/orders", {
        json: walkthroughOrder(),
        headers: { "x-csrf-token": "a".repeat(token.length) },
      }),
      // Another site's Origin is refused even with the right token.
      await send(
        browser.withOrigin("https://evil.example"),
        "POST",
        "/api/orders",
        {
          json: walkthroughOrder(),
          headers: { "x-csrf-token": token },
        },
      ),
      await send(script, "DELETE", "/api/session"),
    ];
    assert.deepEqual(refused.map((r) => r.status), [
      403,
      403,
      403,
      403,
      403,
      403,
    ]);
    assert.deepEqual(await rowCounts(t.sql), before);
    const still = await browser.json<{ state: string }>(
      "GET",
      `/api/orders/${orderId}`,
    );
    assert.equal(still.body.state, "placed");
    assert.equal((await browser.json("GET", "/api/session")).status, 200);

    // With the session's X-CSRF-Token the same requests are accepted.
    const placed = await send(script, "POST", "/api/orders", {
      json: walkthroughOrder(),
      headers: { "x-csrf-token": token },
    });
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    const cancelled = await send(
      script,
      "POST",
      `/api/orders/${orderId}/cancel`,
      { headers: { "x-csrf-token": token } },
    );
    assert.equal(cancelled.status, 202, JSON.stringify(cancelled.body));
    await orderSettles(browser, orderId, "cancelled", 5_000);
  });
});
