/**
 * Well-formed text at the edge: a lone UTF-16 surrogate (valid JSON as an
 * escape, `"\ud800"`, but not Unicode that PostgreSQL stores as sent) in
 * an order, a sign-in name, a refuse reason, a supersede payload or its
 * reason is a 400 naming the field. Nothing is written: no sandbox, no
 * session, no cookie, no row; a surrogate pair (an emoji) is text like any
 * other.
 */
import assert from "node:assert/strict";
import {
  type Client,
  countOf,
  deadLettersSettle,
  placeOrderVia,
  rowCounts,
  signIn,
  type TestBakery,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

type ErrorBody = { error: string; issues: { path: string }[] };

/** Posts JSON; returns status, body and the cookies the answer sets. */
async function post(client: Client, path: string, json: unknown) {
  const response = await client.fetch(path, { method: "POST", json });
  return {
    status: response.status,
    body: await response.json() as ErrorBody,
    setCookie: response.headers.getSetCookie(),
  };
}

const paths = (body: ErrorBody) => (body.issues ?? []).map((i) => i.path);

Deno.test("well-formed text: a lone surrogate in an order or a sign-in name is a 400 naming the field; no cookie, sandbox, session or row", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const order = walkthroughOrder();
    const cases: [string, string, unknown, string][] = [
      ["an order's customer name", "/api/orders", {
        ...order,
        customer: { ...order.customer, name: "Bo\ud800b" },
      }, "customer.name"],
      ["an order's email", "/api/orders", {
        ...order,
        customer: { ...order.customer, email: "bo\udfff@example.com" },
      }, "customer.email"],
      ["a key of an order", "/api/orders", {
        ...order,
        customer: { ...order.customer, ["nick\ud800"]: "Bo" },
      }, "customer.nick\ufffd"],
      ["a sign-in name", "/api/session", { name: "Bo\ud800b" }, "name"],
    ];
    for (const [what, path, body, field] of cases) {
      // A visitor without a cookie: the one a guest session would be made for.
      const client = t.client();
      const answer = await post(client, path, body);
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer)}`);
      assert.deepEqual(paths(answer.body), [field], what);
      assert.match(answer.body.error, /well-formed/, what);
      assert.deepEqual(answer.setCookie, [], `${what}: no cookie`);
      assert.deepEqual(await rowCounts(t.sql), before, what);
    }

    // A guest with a sandbox signs in under a bad name: its sandbox keeps
    // its name, its session stays the one it had.
    const guest = t.client();
    await placeOrderVia(guest);
    const cookie = guest.cookie("bakery_session");
    const tenants = () =>
      t.sql<{ id: string; name: string }[]>`
        select id, name from platform.tenants order by id`;
    const sessions = () =>
      countOf(t.sql<{ n: number }[]>`
        select count(*)::int as n from platform.sessions
         where ended_at is null`);
    const [named, live] = [await tenants(), await sessions()];
    const rename = await post(guest, "/api/session", { name: "Ev\udfffe" });
    assert.equal(rename.status, 400, JSON.stringify(rename.body));
    assert.deepEqual(paths(rename.body), ["name"]);
    assert.deepEqual(rename.setCookie, []);
    assert.equal(guest.cookie("bakery_session"), cookie);
    assert.deepEqual(await tenants(), named);
    assert.equal(await sessions(), live);

    // A surrogate pair is well-formed: stored as sent, and echoed so.
    const emoji = "Bo \u{1F950}";
    const ok = t.client();
    const signedIn = await post(ok, "/api/session", { name: emoji });
    assert.equal(signedIn.status, 201, JSON.stringify(signedIn.body));
    const [row] = await t.sql<{ name: string }[]>`
      select name from platform.tenants
       where id = ${
      (signedIn.body as unknown as { sandboxId: string })
        .sandboxId
    }`;
    assert.equal(row.name, emoji);
  });
});

/** A signed-in operator with one dead letter: the kitchen's OrderPlaced. */
async function kitchenDeadLetter(t: TestBakery) {
  const client = t.client();
  await signIn(client, "Text operator");
  const on = await client.json("PUT", "/api/console/faults", {
    kitchenRefuses: true,
  });
  assert.equal(on.status, 200);
  await placeOrderVia(client);
  const [dead] = await deadLettersSettle(client, 1, "subscriber=kitchen");
  return { client, dead };
}

Deno.test("well-formed text: a lone surrogate in a refuse reason, a supersede payload or its reason is a 400; the dead letter is untouched", async () => {
  await withTestBakery(async (t) => {
    const { client, dead } = await kitchenDeadLetter(t);
    const queue = t.at("orders");
    const [{ envelope }] = await queue<
      { envelope: { payload: Record<string, unknown> } }[]
    >`select envelope from queue.messages where message_id = ${dead.messageId}`;
    const payload = envelope.payload;
    const customer = payload.customer as Record<string, unknown>;
    const lines = payload.lines as Record<string, unknown>[];
    /** What a refusal or a supersede would have written. */
    const state = async () => ({
      deliveries: await queue<
        { id: string; state: string; refused_reason: string | null }[]
      >`select id, state, refused_reason from queue.deliveries order by id`,
      messages: await countOf(queue<{ n: number }[]>`
        select count(*)::int as n from queue.messages`),
      supersessions: await countOf(queue<{ n: number }[]>`
        select count(*)::int as n from queue.supersessions`),
      actions: await countOf(queue<{ n: number }[]>`
        select count(*)::int as n from queue.actions`),
      outbox: await countOf(queue<{ n: number }[]>`
        select count(*)::int as n from orders.outbox`),
    });
    const before = await state();
    const base = `/api/console/dead-letters/${dead.id}`;
    const cases: [string, string, unknown, string][] = [
      ["a refuse reason", `${base}/refuse`, { reason: "dup\ud800" }, "reason"],
      ["a bulk refuse reason", "/api/console/dead-letters/refuse", {
        reason: "\udfff",
      }, "reason"],
      ["a supersede reason", `${base}/supersede`, {
        payload,
        reason: "fix\udfff",
      }, "reason"],
      ["a name in a supersede payload", `${base}/supersede`, {
        payload: { ...payload, customer: { ...customer, name: "Bo\ud800b" } },
        reason: "fix",
      }, "payload.customer.name"],
      ["a line in a supersede payload", `${base}/supersede`, {
        payload: { ...payload, lines: [{ ...lines[0], name: "\ud800" }] },
        reason: "fix",
      }, "payload.lines.0.name"],
    ];
    for (const [what, path, body, field] of cases) {
      const answer = await post(client, path, body);
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer)}`);
      assert.deepEqual(paths(answer.body), [field], what);
      assert.deepEqual(answer.setCookie, [], what);
      assert.deepEqual(await state(), before, what);
    }
    assert.equal(
      before.deliveries.find((d) => Number(d.id) === dead.id)?.state,
      "dead",
    );
  });
});

Deno.test("well-formed text: a lone surrogate escaped in a query or a path is never a 500", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Query operator");
    // UTF-8 of U+D800: no decoder makes a lone surrogate of it, but a
    // decodeURIComponent of it throws.
    const bad = "%ED%A0%80";
    for (
      const path of [
        `/api/console/search?q=${bad}`,
        `/api/console/dead-letters?subscriber=${bad}`,
        `/api/console/deliveries?state=${bad}`,
        `/api/orders/${bad}`,
        `/console/search?q=${bad}`,
      ]
    ) {
      const response = await client.fetch(path);
      await response.body?.cancel();
      assert.ok(
        response.status < 500,
        `${path} answered ${response.status}`,
      );
    }
  });
});
