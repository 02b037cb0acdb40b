/**
 * Sessions: sign in (a new sandbox, or the guest's own), read, sign out. The
 * cookie is HttpOnly and SameSite=Lax, is rotated at sign-in, and an ended
 * session's cookie never works again.
 */
import assert from "node:assert/strict";
import { COOKIE } from "../kit/http/session_middleware.ts";
import { countOf, placeOrderVia, withTestBakery } from "./_app.ts";

/** GET `path` with nothing but the given session cookie. */
async function withCookie(url: string, path: string, token: string) {
  const response = await fetch(new URL(path, url), {
    headers: { cookie: `${COOKIE}=${token}` },
  });
  await response.body?.cancel();
  return response.status;
}

function sessionCookie(response: Response): string {
  const cookies = response.headers.getSetCookie()
    .filter((c) => c.startsWith(`${COOKIE}=`));
  assert.equal(cookies.length, 1, JSON.stringify(cookies));
  return cookies[0];
}

Deno.test("session: signing in without a session opens a new sandbox", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const response = await client.fetch("/api/session", {
      method: "POST",
      json: { name: "Ada" },
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    assert.match(
      body.sandboxId,
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    assert.equal(body.name, "Ada");
    const cookie = sessionCookie(response);
    assert.match(cookie, /;\s*HttpOnly/i);
    assert.match(cookie, /;\s*SameSite=Lax/i);
    assert.match(cookie, /;\s*Path=\//i);

    const [sandbox] = await t.sql`
      select name from platform.tenants where id = ${body.sandboxId}`;
    assert.equal(sandbox.name, "Ada");
    const read = await client.json<Record<string, string>>(
      "GET",
      "/api/session",
    );
    assert.equal(read.status, 200);
    assert.equal(read.body.sandboxId, body.sandboxId);
    assert.equal(read.body.name, "Ada");
    assert.match(read.body.csrfToken, /^[A-Za-z0-9_-]{43}$/);

    // Bad names are a 400 naming the field.
    for (const name of ["", "   ", "x".repeat(81)]) {
      const bad = await t.client().json<{ issues: { path: string }[] }>(
        "POST",
        "/api/session",
        { name },
      );
      assert.equal(bad.status, 400, JSON.stringify(name));
      assert.equal(bad.body.issues[0].path, "name");
    }
    assert.equal(
      await countOf(t.sql<{ n: number }[]>`
        select count(*)::int as n from platform.tenants`),
      1,
    );
  });
});

Deno.test("session: a guest who signs in keeps the sandbox, with a new cookie", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { orderId } = await placeOrderVia(client);
    const guestToken = client.cookie(COOKIE)!;
    assert.ok(guestToken, "placing an order opened a guest session");
    const guest = await client.json<Record<string, string | null>>(
      "GET",
      "/api/session",
    );
    assert.equal(guest.status, 200);
    assert.equal(guest.body.name, null);
    const sandboxes = () =>
      countOf(t.sql<{ n: number }[]>`
        select count(*)::int as n from platform.tenants`);
    assert.equal(await sandboxes(), 1);

    const signIn = await client.fetch("/api/session", {
      method: "POST",
      json: { name: "Ada" },
    });
    assert.equal(signIn.status, 201);
    const signedIn = await signIn.json();
    assert.equal(signedIn.sandboxId, guest.body.sandboxId);
    assert.match(sessionCookie(signIn), /HttpOnly/i);
    const token = client.cookie(COOKIE)!;
    assert.notEqual(token, guestToken, "the cookie is rotated at sign-in");
    assert.equal(await sandboxes(), 1);

    // The same sandbox: the guest's order is still theirs.
    const order = await client.json("GET", `/api/orders/${orderId}`);
    assert.equal(order.status, 200);
    const read = await client.json<Record<string, string>>(
      "GET",
      "/api/session",
    );
    assert.equal(read.body.name, "Ada");
    assert.notEqual(read.body.csrfToken, guest.body.csrfToken);

    // The guest cookie ended with the rotation.
    assert.equal(await withCookie(t.url, "/api/session", guestToken), 401);
    assert.equal(
      await withCookie(t.url, `/api/orders/${orderId}`, guestToken),
      401,
    );
    assert.equal(await withCookie(t.url, "/api/session", token), 200);
  });
});

Deno.test("session: signing out ends the session; the old cookie gets 401", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const signIn = await client.json("POST", "/api/session", { name: "Ada" });
    assert.equal(signIn.status, 201);
    const { orderId } = await placeOrderVia(client);
    const token = client.cookie(COOKIE)!;
    assert.equal(await withCookie(t.url, "/api/session", token), 200);

    const out = await client.fetch("/api/session", { method: "DELETE" });
    assert.equal(out.status, 204);
    assert.equal(await out.text(), "");
    assert.match(sessionCookie(out), /Max-Age=0|Expires=Thu, 01 Jan 1970/i);
    assert.equal(client.cookie(COOKIE), undefined);

    assert.equal(await withCookie(t.url, "/api/session", token), 401);
    assert.equal(await withCookie(t.url, `/api/orders/${orderId}`, token), 401);
    const [live] = await t.sql`
      select count(*)::int as n from platform.sessions where ended_at is null`;
    assert.equal(live.n, 0);
    const read = await client.json("GET", "/api/session");
    assert.equal(read.status, 401);
    // Signing out twice is harmless.
    const twice = await client.fetch("/api/session", { method: "DELETE" });
    assert.equal(twice.status, 204);
    await twice.body?.cancel();
  });
});
