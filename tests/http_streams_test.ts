/**
 * Server-sent event streams are capped per session and per client address
 * (a 429 with Retry-After past either cap, other sessions and addresses
 * unaffected), signing out ends that session's open streams, and an
 * order's stream opens only for an order of the caller's sandbox.
 */
import assert from "node:assert/strict";
import {
  STREAMS_PER_ADDRESS,
  STREAMS_PER_SESSION,
} from "../routes/api/events.ts";
import { type Client, placeOrderVia, signIn, withTestBakery } from "./_app.ts";

/** An open event stream (`path`): its status and a reader past `hello`. */
async function openStream(
  client: Client,
  path = "/api/events",
  headers: Record<string, string> = {},
) {
  const response = await client.fetch(path, { headers });
  if (response.status !== 200) {
    const retryAfter = response.headers.get("retry-after");
    const body = await response.json();
    return { status: response.status, retryAfter, body, reader: null };
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  while (!seen.includes("event: hello")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the stream ended before hello");
    seen += decoder.decode(value);
  }
  return { status: 200, retryAfter: null, body: null, reader };
}

/** A short look at a stream: "ended", "data", or "open" after 200 ms. */
async function glance(reader: ReadableStreamDefaultReader<Uint8Array>) {
  return await Promise.race([
    reader.read().then((r) => r.done ? "ended" : "data"),
    new Promise<string>((r) => setTimeout(() => r("open"), 200)),
  ]);
}

/** Resolves true when the stream ends, false if it is still open after 10 s. */
async function ends(reader: ReadableStreamDefaultReader<Uint8Array>) {
  const timeout = new Promise<false>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    Deno.unrefTimer(timer);
  });
  const done = (async () => {
    while (!(await reader.read()).done) {
      // heartbeats and changes until the server ends it
    }
    return true;
  })().catch(() => true);
  return await Promise.race([done, timeout]);
}

Deno.test("event streams: capped per session; other sessions are not affected", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Operator");
    const open = [];
    for (let i = 0; i < STREAMS_PER_SESSION; i++) {
      const stream = await openStream(client);
      assert.equal(stream.status, 200, `stream ${i}`);
      open.push(stream.reader!);
    }
    const refused = await openStream(client);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.ok(Number(refused.retryAfter) >= 1, `${refused.retryAfter}`);
    assert.match(refused.body.error, /streams/);

    const other = t.client();
    await signIn(other, "Another");
    const theirs = await openStream(other);
    assert.equal(theirs.status, 200);

    // Closing one makes room for one.
    await open.pop()!.cancel();
    let again;
    const deadline = Date.now() + 10_000;
    do {
      again = await openStream(client);
    } while (again.status === 429 && Date.now() < deadline);
    assert.equal(again.status, 200);
    for (const reader of [...open, again.reader!, theirs.reader!]) {
      await reader.cancel();
    }
  });
});

Deno.test("event streams: signing out ends the session's streams, not others'", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Operator");
    const mine = [await openStream(client), await openStream(client)];
    const other = t.client();
    await signIn(other, "Another");
    const theirs = await openStream(other);

    const out = await client.fetch("/api/session", { method: "DELETE" });
    assert.equal(out.status, 204);
    for (const stream of mine) {
      assert.equal(await ends(stream.reader!), true, "my stream ended");
    }
    // The other session's stream has not ended (a short look is enough to
    // catch an end that signing out would have caused already).
    assert.notEqual(
      await glance(theirs.reader!),
      "ended",
      "the other session's stream stays open",
    );
    await theirs.reader!.cancel();

    // The form's sign-out ends streams too.
    const formUser = t.client();
    await signIn(formUser, "Form");
    const { body } = await formUser.json<{ csrfToken: string }>(
      "GET",
      "/api/session",
    );
    const stream = await openStream(formUser);
    const signOut = await formUser.fetch("/sign-out", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `_csrf=${body.csrfToken}`,
      redirect: "manual",
    });
    await signOut.body?.cancel();
    assert.equal(signOut.status, 303);
    assert.equal(await ends(stream.reader!), true, "the form's sign-out");
  });
});

Deno.test("event streams: a session ended elsewhere (the daily wipe, another process) ends its streams, not others'", async () => {
  await withTestBakery(async (t) => {
    const wiped = t.client();
    await signIn(wiped, "Wiped");
    const { body: mine } = await wiped.json<{ sandboxId: string }>(
      "GET",
      "/api/session",
    );
    const stream = await openStream(wiped);
    const other = t.client();
    await signIn(other, "Another");
    const theirs = await openStream(other);

    // What the daily wipe does to a sandbox's sessions, and what another
    // process's sign-out does: the row ends, and this process is not told.
    const ended = await t.sql`update platform.sessions set ended_at = now()
      where tenant_id = ${mine.sandboxId} and ended_at is null`;
    assert.ok(ended.count >= 1);
    assert.equal(
      await ends(stream.reader!),
      true,
      "the ended session's stream",
    );

    assert.notEqual(
      await glance(theirs.reader!),
      "ended",
      "the other session's stream stays open",
    );
    await theirs.reader!.cancel();
  });
});

Deno.test("event streams: capped per client address too, whatever its sessions; other addresses are not affected", async () => {
  await withTestBakery(async (t) => {
    // Behind a proxy the address is the forwarded one, so one test can be
    // two addresses.
    const from = (address: string) => ({ "x-forwarded-for": address });
    const here = from("203.0.113.7");
    const open = [];
    const sessions = Math.ceil(STREAMS_PER_ADDRESS / STREAMS_PER_SESSION);
    for (let s = 0; s < sessions; s++) {
      const client = t.client();
      await signIn(client, `Tab keeper ${s + 1}`);
      for (let i = 0; i < STREAMS_PER_SESSION; i++) {
        if (open.length === STREAMS_PER_ADDRESS) break;
        const stream = await openStream(client, "/api/events", here);
        assert.equal(stream.status, 200, `session ${s + 1}, stream ${i + 1}`);
        open.push(stream.reader!);
      }
    }
    // A fresh session from the same address brings no more streams.
    const fresh = t.client();
    await signIn(fresh, "One more session");
    const refused = await openStream(fresh, "/api/events", here);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.ok(Number(refused.retryAfter) >= 1, `${refused.retryAfter}`);
    assert.match(refused.body.error, /an address/);

    // Another address, and the same session from it, are not held back.
    const elsewhere = await openStream(
      fresh,
      "/api/events",
      from("198.51.100.9"),
    );
    assert.equal(elsewhere.status, 200);

    // Closing one makes room for one.
    await open.pop()!.cancel();
    let again;
    const deadline = Date.now() + 10_000;
    do {
      again = await openStream(fresh, "/api/events", here);
    } while (again.status === 429 && Date.now() < deadline);
    assert.equal(again.status, 200);
    for (const reader of [...open, again.reader!, elsewhere.reader!]) {
      await reader.cancel();
    }
  }, { PUBLIC_URL: "http://bakery.test" });
});

Deno.test("event streams: an order's stream is only for an order of the caller's sandbox", async () => {
  await withTestBakery(async (t) => {
    const ada = t.client();
    await signIn(ada, "Ada");
    const { orderId } = await placeOrderVia(ada);
    const mine = await openStream(ada, `/api/orders/${orderId}/events`);
    assert.equal(mine.status, 200);

    const bob = t.client();
    await signIn(bob, "Bob");
    const theirs = await openStream(bob, `/api/orders/${orderId}/events`);
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    assert.match(theirs.body.error, /no order/);
    for (
      const id of [crypto.randomUUID(), "not-an-order", "x".repeat(300)]
    ) {
      const unknown = await openStream(ada, `/api/orders/${id}/events`);
      assert.equal(
        unknown.status,
        404,
        `${id}: ${JSON.stringify(unknown.body)}`,
      );
    }
    await mine.reader!.cancel();
  });
});
