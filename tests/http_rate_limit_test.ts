/**
 * Rate limits (RATE_LIMIT_PER_MINUTE, here 5): session creation, orders,
 * payments and console actions, each counted per session and per client
 * address; over the limit a 429 with Retry-After that writes nothing. The
 * address is the connection's; X-Forwarded-For counts only behind a proxy
 * (PUBLIC_URL). `0` turns the limits off. Reading is never limited.
 */
import assert from "node:assert/strict";
import {
  type Client,
  countOf,
  placeOrderVia,
  signIn,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

const LIMIT = { RATE_LIMIT_PER_MINUTE: "5" };

/** Sends JSON with an optional X-Forwarded-For; status and Retry-After. */
async function send(
  client: Client,
  method: string,
  path: string,
  json?: unknown,
  forwardedFor?: string,
) {
  const response = await client.fetch(path, {
    method,
    json,
    headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {},
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: text ? JSON.parse(text) : null,
  };
}

/** A 429 with a Retry-After of 1 to 60 seconds and an error that says so. */
function assertLimited(answer: Awaited<ReturnType<typeof send>>, what: string) {
  assert.equal(answer.status, 429, `${what}: ${JSON.stringify(answer)}`);
  const seconds = Number(answer.retryAfter);
  assert.ok(
    Number.isInteger(seconds) && seconds >= 1 && seconds <= 60,
    `${what}: Retry-After ${answer.retryAfter}`,
  );
  assert.match(answer.body.error, /too many/i, what);
}

Deno.test("rate limits: the sixth session from one address is a 429, and X-Forwarded-For does not help without a proxy", async () => {
  await withTestBakery(async (t) => {
    const sandboxes = () =>
      countOf(t.sql<{ n: number }[]>`
        select count(*)::int as n from platform.tenants`);
    for (let i = 0; i < 5; i++) {
      const answer = await send(t.client(), "POST", "/api/session", {
        name: `Visitor ${i}`,
      }, `198.51.100.${i}`);
      assert.equal(answer.status, 201, JSON.stringify(answer));
    }
    assertLimited(
      await send(t.client(), "POST", "/api/session", { name: "Sixth" }),
      "a sixth session",
    );
    assertLimited(
      await send(t.client(), "POST", "/api/session", {
        name: "Spoofed",
      }, "203.0.113.99"),
      "a sixth session with another X-Forwarded-For",
    );
    // A guest session made by an order counts as an order, not a sign-in.
    const guest = t.client();
    await placeOrderVia(guest);
    assert.equal(await sandboxes(), 6);
    // Reading is not limited.
    for (let i = 0; i < 10; i++) {
      assert.equal((await send(guest, "GET", "/api/session")).status, 200);
    }
  }, LIMIT);
});

Deno.test("rate limits: behind a proxy, orders are limited per session and per forwarded address", async () => {
  await withTestBakery(async (t) => {
    const orders = () =>
      countOf(t.at("orders")<{ n: number }[]>`
        select count(*)::int as n from orders.orders`);
    // One session, a new address each time: the session's count stops it.
    // (Signed in first: an order without a session is counted by address.)
    const client = t.client();
    await signIn(client, "Proxy visitor");
    for (let i = 0; i < 5; i++) {
      const answer = await send(
        client,
        "POST",
        "/api/orders",
        walkthroughOrder(),
        `198.51.100.${i}`,
      );
      assert.equal(answer.status, 201, JSON.stringify(answer));
    }
    assertLimited(
      await send(
        client,
        "POST",
        "/api/orders",
        walkthroughOrder(),
        "198.51.100.77",
      ),
      "a sixth order in one session",
    );
    assert.equal(await orders(), 5);

    // A new visitor each time, one address: the address's count stops it.
    for (let i = 0; i < 5; i++) {
      const answer = await send(
        t.client(),
        "POST",
        "/api/orders",
        walkthroughOrder(),
        "10.0.0.1, 203.0.113.7",
      );
      assert.equal(answer.status, 201, JSON.stringify(answer));
    }
    assertLimited(
      await send(
        t.client(),
        "POST",
        "/api/orders",
        walkthroughOrder(),
        "10.9.9.9, 203.0.113.7",
      ),
      "a sixth order from one address (the proxy's last entry)",
    );
    assert.equal(await orders(), 10);
    // Another address is its own count.
    const other = await send(
      t.client(),
      "POST",
      "/api/orders",
      walkthroughOrder(),
      "203.0.113.8",
    );
    assert.equal(other.status, 201);
  }, { ...LIMIT, PUBLIC_URL: "http://bakery.test" });
});

Deno.test("rate limits: payments and console actions have their own counts", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Operator");
    const { orderId } = await placeOrderVia(client);
    // An unknown card is refused (400) but still counts as an attempt.
    for (let i = 0; i < 5; i++) {
      const answer = await send(client, "POST", `/api/orders/${orderId}/pay`, {
        card: "4111111111111111",
      });
      assert.equal(answer.status, 400, JSON.stringify(answer));
    }
    assertLimited(
      await send(client, "POST", `/api/orders/${orderId}/pay`, {
        card: "4242424242424242",
      }),
      "a sixth payment",
    );
    assert.equal(
      await countOf(t.at("billing")<{ n: number }[]>`
        select count(*)::int as n from billing.payments`),
      0,
    );

    // Console actions: redrive, refuse and faults share one count.
    const actions: [string, string, unknown][] = [
      ["POST", "/api/console/dead-letters/999/redrive", undefined],
      ["POST", "/api/console/dead-letters/999/refuse", { reason: "test" }],
      ["POST", "/api/console/dead-letters/redrive", { ids: [999] }],
      ["POST", "/api/console/dead-letters/refuse", { reason: "test" }],
      ["PUT", "/api/console/faults", { kitchenRefuses: false }],
    ];
    for (const [method, path, json] of actions) {
      const answer = await send(client, method, path, json);
      assert.ok(answer.status < 429, `${path}: ${JSON.stringify(answer)}`);
    }
    assertLimited(
      await send(client, "PUT", "/api/console/faults", {
        kitchenRefuses: true,
      }),
      "a sixth console action",
    );
    const faults = await send(client, "GET", "/api/console/faults");
    assert.equal(faults.status, 200);
    assert.equal(faults.body.kitchenRefuses, false);
    // Orders are a count of their own: one order more is fine.
    await placeOrderVia(client);
  }, LIMIT);
});

Deno.test("rate limits: RATE_LIMIT_PER_MINUTE=0 turns them off", async () => {
  await withTestBakery(async (t) => {
    for (let i = 0; i < 30; i++) {
      const answer = await send(t.client(), "POST", "/api/session", {
        name: `Load ${i}`,
      });
      assert.equal(answer.status, 201, `session ${i}`);
    }
  }, { RATE_LIMIT_PER_MINUTE: "0" });
});
