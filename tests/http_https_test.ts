/**
 * Behind a TLS proxy (PUBLIC_URL with https): the session cookie is always
 * `__Host-` and Secure, the unprefixed cookie is never accepted, and every
 * answer carries Strict-Transport-Security. Over plain http, neither. And
 * `/metrics` with METRICS_TOKEN set needs `Authorization: Bearer <token>`.
 */
import assert from "node:assert/strict";
import { COOKIE } from "../kit/http/session_middleware.ts";
import { type Client, withTestBakery } from "./_app.ts";

const SECURE = `__Host-${COOKIE}`;

/** GET `path` with exactly the given Cookie header; status and headers. */
async function withCookie(url: string, path: string, cookie: string) {
  const response = await fetch(new URL(path, url), { headers: { cookie } });
  await response.body?.cancel();
  return response;
}

/** Signs in; the answer, body read, for its headers. */
async function signInAnswer(client: Client): Promise<Response> {
  const response = await client.fetch("/api/session", {
    method: "POST",
    json: { name: "Ada" },
  });
  assert.equal(response.status, 201);
  await response.body?.cancel();
  return response;
}

Deno.test("https behind a proxy: a __Host- Secure cookie only, and HSTS", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const response = await signInAnswer(client);
    const cookies = response.headers.getSetCookie();
    assert.equal(cookies.length, 1, JSON.stringify(cookies));
    const [cookie] = cookies;
    assert.ok(cookie.startsWith(`${SECURE}=`), cookie);
    assert.match(cookie, /;\s*Secure/i);
    assert.match(cookie, /;\s*Path=\//i);
    assert.match(cookie, /;\s*HttpOnly/i);
    assert.doesNotMatch(cookie, /Domain=/i);
    const hsts = response.headers.get("strict-transport-security") ?? "";
    assert.match(hsts, /^max-age=\d{8,}/, hsts);

    const token = client.cookie(SECURE)!;
    assert.equal(
      (await withCookie(t.url, "/api/session", `${SECURE}=${token}`)).status,
      200,
    );
    // The same token under the unprefixed name: not a session over https.
    assert.equal(
      (await withCookie(t.url, "/api/session", `${COOKIE}=${token}`)).status,
      401,
    );
    // Every answer carries HSTS, pages and errors alike.
    for (const path of ["/", "/api/menu", "/api/no-such-thing", "/health"]) {
      const answer = await withCookie(t.url, path, "");
      assert.match(
        answer.headers.get("strict-transport-security") ?? "",
        /^max-age=/,
        path,
      );
    }
  }, { PUBLIC_URL: "https://bakery.example" });
});

Deno.test("plain http: the unprefixed cookie, no Secure, no HSTS", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const response = await signInAnswer(client);
    const [cookie] = response.headers.getSetCookie();
    assert.ok(cookie.startsWith(`${COOKIE}=`), cookie);
    assert.doesNotMatch(cookie, /Secure/i);
    assert.equal(response.headers.get("strict-transport-security"), null);
  });
});

Deno.test("metrics: open without METRICS_TOKEN", async () => {
  await withTestBakery(async (t) => {
    const response = await fetch(new URL("/metrics", t.url));
    assert.equal(response.status, 200);
    assert.match(await response.text(), /^# (HELP|TYPE) /m);
  });
});

Deno.test("metrics: with METRICS_TOKEN, only Authorization: Bearer <token>", async () => {
  const token = "metrics-token-for-the-test-0123";
  await withTestBakery(async (t) => {
    const get = async (authorization?: string) => {
      const response = await fetch(new URL("/metrics", t.url), {
        headers: authorization ? { authorization } : {},
      });
      return {
        status: response.status,
        challenge: response.headers.get("www-authenticate"),
        text: await response.text(),
      };
    };
    const none = await get();
    assert.equal(none.status, 401);
    assert.match(none.challenge ?? "", /^Bearer/);
    assert.doesNotMatch(none.text, /outbox/);
    const wrong = await get(`Bearer ${token}x`);
    assert.equal(wrong.status, 401);
    assert.doesNotMatch(wrong.text, /outbox/);
    assert.equal((await get(`Basic ${btoa(`u:${token}`)}`)).status, 400);
    const right = await get(`Bearer ${token}`);
    assert.equal(right.status, 200);
    assert.match(right.text, /^# (HELP|TYPE) /m);
  }, { METRICS_TOKEN: token });
});
