/**
 * Hostile input through HTTP: a NUL character in any text that would reach
 * PostgreSQL, a multipart body without a boundary, a card "number" that is a
 * name of Object.prototype, and CR/LF in the sign-in's `next`. Each answer is
 * a clear 4xx (400 naming the field, or a safe redirect), never a 500, and
 * nothing is written.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import {
  type Client,
  countOf,
  deadLettersSettle,
  paymentIntentEvent,
  placeOrderVia,
  postWebhook,
  rowCounts,
  signIn,
  TEST_WEBHOOK_SECRET,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

type ErrorBody = { error: string; issues?: { path: string }[] };

/** Sends a raw body with `contentType`; returns status and text. */
async function raw(
  client: Client,
  method: string,
  path: string,
  contentType: string,
  body: string,
) {
  const response = await client.fetch(path, {
    method,
    headers: { "content-type": contentType },
    body,
    redirect: "manual",
  });
  return { status: response.status, text: await response.text() };
}

const paths = (body: ErrorBody) => (body.issues ?? []).map((i) => i.path);

Deno.test("hostile input: a NUL character is a 400 naming the field, and nothing is written", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const order = walkthroughOrder();
    const cases: [string, string, unknown, string][] = [
      ["customer.name", "/api/orders", {
        ...order,
        customer: { ...order.customer, name: "Ada\u0000Baker" },
      }, "customer.name"],
      ["customer.email", "/api/orders", {
        ...order,
        customer: { ...order.customer, email: "ada\u0000@example.com" },
      }, "customer.email"],
      ["the sign-in name", "/api/session", { name: "A\u0000da" }, "name"],
    ];
    for (const [what, path, body, field] of cases) {
      const client = t.client();
      const answer = await client.json<ErrorBody>("POST", path, body);
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer)}`);
      assert.ok(paths(answer.body).includes(field), `${what}: ${field}`);
      assert.deepEqual(await rowCounts(t.sql), before, what);
    }

    // The sign-in form without scripts: a guest renames its sandbox.
    const guest = t.client();
    await placeOrderVia(guest);
    const { body: session } = await guest.json<{ csrfToken: string }>(
      "GET",
      "/api/session",
    );
    const named = () =>
      t.sql<{ name: string }[]>`select name from platform.tenants`;
    const sandboxes = await named();
    const form = new URLSearchParams({
      _csrf: session.csrfToken,
      name: "Ev\u0000e",
      next: "/console",
    });
    const submitted = await raw(
      guest,
      "POST",
      "/sign-in",
      "application/x-www-form-urlencoded",
      form.toString(),
    );
    assert.equal(submitted.status, 400, submitted.text.slice(0, 300));
    assert.deepEqual(await named(), sandboxes);
  });
});

Deno.test("hostile input: a NUL in a refuse reason, a fault name or a signed Stripe event is a 400", async () => {
  await withTestBakery(async (t) => {
    const operator = t.client();
    await signIn(operator, "Operator");
    const on = await operator.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
    });
    assert.equal(on.status, 200);
    const { orderId, totalCents } = await placeOrderVia(operator);
    const [dead] = await deadLettersSettle(operator, 1);
    // Each sender's database holds the actions on its deliveries; with one
    // database, both name the same pool, counted once.
    const actions = async () => {
      let n = 0;
      for (const sql of new Set([t.at("orders"), t.at("billing")])) {
        n += await countOf(sql<{ n: number }[]>`
          select count(*)::int as n from queue.actions`);
      }
      return n;
    };

    const refuse = await operator.json<ErrorBody>(
      "POST",
      `/api/console/dead-letters/${dead.id}/refuse`,
      { reason: "duplicate\u0000order" },
    );
    assert.equal(refuse.status, 400, JSON.stringify(refuse.body));
    assert.deepEqual(paths(refuse.body), ["reason"]);
    const bulk = await operator.json<ErrorBody>(
      "POST",
      "/api/console/dead-letters/refuse",
      { reason: "\u0000" },
    );
    assert.equal(bulk.status, 400, JSON.stringify(bulk.body));
    assert.ok(paths(bulk.body).includes("reason"));
    // The kitchen's OrderPlaced: a delivery of orders' queue.
    const [row] = await t.at("orders")<{ state: string }[]>`
      select state from queue.deliveries where id = ${dead.id}`;
    assert.equal(row.state, "dead");
    assert.equal(await actions(), 0);

    const fault = await operator.json<ErrorBody>(
      "PUT",
      "/api/console/faults",
      { "kitchen\u0000Refuses": false },
    );
    assert.equal(fault.status, 400, JSON.stringify(fault.body));

    // A Stripe event carries text into billing's rows: its id, its type and
    // the decline message. Signed, so only the signature is not the problem.
    const { body: session } = await operator.json<{ sandboxId: string }>(
      "GET",
      "/api/session",
    );
    const payments = () =>
      countOf(t.at("billing")<{ n: number }[]>`
        select count(*)::int as n from billing.stripe_events`);
    const event = paymentIntentEvent({
      sandboxId: session.sandboxId,
      orderId,
      paymentId: "pi_test_nul",
      amountCents: totalCents,
      type: "payment_intent.payment_failed",
    });
    const spoiled = [
      { ...event, id: "evt_\u0000" },
      { ...event, type: "payment_intent.\u0000" },
      {
        ...event,
        data: {
          object: {
            ...event.data.object,
            last_payment_error: { message: "declined\u0000" },
          },
        },
      },
    ];
    for (const body of spoiled) {
      const payload = JSON.stringify(body);
      const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
        payload,
        secret: TEST_WEBHOOK_SECRET,
      });
      const answer = await postWebhook(t.url, payload, signature);
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
    }
    assert.equal(await payments(), 0);
  });
});

Deno.test("hostile input: multipart/form-data without a boundary is a 400 on every POST", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const targets: [string, string][] = [
      ["POST", "/api/orders"],
      ["POST", "/api/session"],
      ["POST", "/sign-in"],
      ["POST", "/sign-out"],
      ["PUT", "/api/console/faults"],
      ["POST", "/api/console/dead-letters/1/refuse"],
      ["POST", "/no/such/path"],
    ];
    for (const [method, path] of targets) {
      const answer = await raw(
        t.client(),
        method,
        path,
        "multipart/form-data",
        "name=Ada",
      );
      assert.equal(answer.status, 400, `${method} ${path}: ${answer.text}`);
    }
    // A boundary that the body does not follow: the same.
    const broken = await raw(
      t.client(),
      "POST",
      "/sign-in",
      "multipart/form-data; boundary=xyz",
      "--abc\r\nnot a part\r\n",
    );
    assert.equal(broken.status, 400, broken.text);
    assert.deepEqual(await rowCounts(t.sql), before);
  });
});

Deno.test("hostile input: a card named after Object.prototype is a 400, and the order stays placed", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    for (const card of ["constructor", "__proto__", "toString", "valueOf"]) {
      const answer = await client.json<ErrorBody>(
        "POST",
        `/api/orders/${orderId}/pay`,
        { card },
      );
      assert.equal(answer.status, 400, `${card}: ${JSON.stringify(answer)}`);
      assert.deepEqual(paths(answer.body), ["card"], card);
    }
    // An unknown number of the right shape is refused as before.
    const unknown = await client.json<ErrorBody>(
      "POST",
      `/api/orders/${orderId}/pay`,
      { card: "4111 1111 1111 1111" },
    );
    assert.equal(unknown.status, 400);
    assert.deepEqual(paths(unknown.body), ["card"]);
    assert.equal(
      await countOf(t.at("billing")<{ n: number }[]>`
        select count(*)::int as n from billing.payments`),
      0,
    );
    const [order] = await t.at("orders")<{ state: string }[]>`
      select state from orders.orders where id = ${orderId}`;
    assert.equal(order.state, "placed");
  });
});

Deno.test("hostile input: CR, LF or other control characters in next are a redirect to the console", async () => {
  await withTestBakery(async (t) => {
    const operator = t.client();
    await signIn(operator, "Operator");
    const hostile = [
      "/console\r\nSet-Cookie: bakery_session=stolen",
      "/console/outbox\nLocation: https://evil.example/",
      "/console\u0000",
      "/console/\u00e9t\u00e9",
      "/console/../sign-out",
    ];
    for (const next of hostile) {
      const response = await operator.fetch(
        `/sign-in?next=${encodeURIComponent(next)}`,
        { redirect: "manual" },
      );
      await response.body?.cancel();
      assert.equal(response.status, 303, JSON.stringify(next));
      const location = response.headers.get("location") ?? "";
      assert.match(location, /^\/console[\x21-\x7e]*$/, JSON.stringify(next));
      assert.ok(!location.includes(".."), location);
      assert.equal(response.headers.getSetCookie().length, 0);
    }
    // A good next survives, query included.
    const good = await operator.fetch(
      `/sign-in?next=${encodeURIComponent("/console/deliveries?state=dead")}`,
      { redirect: "manual" },
    );
    await good.body?.cancel();
    assert.equal(
      good.headers.get("location"),
      "/console/deliveries?state=dead",
    );

    // The form's next: the same rules.
    const { body: session } = await operator.json<{ csrfToken: string }>(
      "GET",
      "/api/session",
    );
    const form = new URLSearchParams({
      _csrf: session.csrfToken,
      name: "Operator",
      next: "/console\r\nSet-Cookie: x=1",
    });
    const response = await operator.fetch("/sign-in", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
      redirect: "manual",
    });
    await response.body?.cancel();
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), "/console");
  });
});
