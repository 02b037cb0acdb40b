/**
 * `GET /health` tells whether the process has started and the database
 * answers, and the app's fallbacks answer unknown API routes with JSON and
 * unknown pages with HTML.
 */
import assert from "node:assert/strict";
import { createApp } from "../app.tsx";
import { connect } from "../lib/db/connect.ts";
import { adminUrl, testDatabase, withTestDatabase } from "./_db.ts";
import { testConfig, testDeps } from "./_app.ts";

function appFor(sql: ReturnType<typeof connect>) {
  return createApp(testDeps(sql));
}

/** Drops the test database while the app's pool still points at it. */
async function dropUnderTheApp(db: { url: string }) {
  const name = new URL(db.url).pathname.slice(1);
  const admin = connect(adminUrl(), { max: 1 });
  try {
    await admin`drop database ${admin(name)} with (force)`;
  } finally {
    await admin.end();
  }
}

Deno.test("health: 200 while the database answers, 503 once it is gone", async () => {
  const db = await testDatabase({ max: 2 });
  try {
    const app = appFor(db.sql);
    const up = await app.fetch(new Request("http://127.0.0.1/health"));
    assert.equal(up.status, 200);
    assert.deepEqual(await up.json(), {
      status: "ok",
      database: "up",
      queue: testConfig().QUEUE,
    });

    await dropUnderTheApp(db);

    const started = Date.now();
    const down = await app.fetch(new Request("http://127.0.0.1/health"));
    assert.equal(down.status, 503);
    assert.deepEqual(await down.json(), {
      status: "degraded",
      database: "down",
      queue: testConfig().QUEUE,
    });
    // The answer comes from the failed query, well before the 2 s timeout.
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
  } finally {
    await db.drop();
  }
});

Deno.test('health: 503 "starting" until the process has started all it runs', async () => {
  await withTestDatabase(async ({ sql }) => {
    const deps = { ...testDeps(sql), started: false };
    const app = createApp(deps);
    const starting = await app.fetch(new Request("http://127.0.0.1/health"));
    assert.equal(starting.status, 503);
    assert.equal((await starting.json()).status, "starting");
    deps.started = true;
    const up = await app.fetch(new Request("http://127.0.0.1/health"));
    assert.equal(up.status, 200);
    assert.equal((await up.json()).status, "ok");
  });
});

Deno.test("health: a request that needs the database while it is gone is a 503 with Retry-After, not a 500", async () => {
  const db = await testDatabase({ max: 2 });
  try {
    const app = appFor(db.sql);
    const signIn = () =>
      app.fetch(
        new Request("http://127.0.0.1/api/session", {
          method: "POST",
          headers: {
            origin: "http://127.0.0.1",
            "content-type": "application/json",
          },
          body: JSON.stringify({ name: "Ada" }),
        }),
      );
    assert.equal((await signIn()).status, 201);

    await dropUnderTheApp(db);

    const down = await signIn();
    assert.equal(down.status, 503);
    assert.equal(down.headers.get("retry-after"), "1");
    assert.match((await down.json()).error, /database is not answering/);
  } finally {
    await db.drop();
  }
});

Deno.test("health: an unknown API route is a 404 in JSON", async () => {
  await withTestDatabase(async ({ sql }) => {
    const app = appFor(sql);
    for (const [method, path] of [["GET", "/api/nothing"], ["POST", "/api"]]) {
      const res = await app.fetch(
        // A same-site Origin passes the CSRF check, which comes first.
        new Request(`http://127.0.0.1${path}`, {
          method,
          headers: { origin: "http://127.0.0.1" },
        }),
      );
      assert.equal(res.status, 404);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      assert.deepEqual(await res.json(), {
        error: `no route ${method} ${path}`,
      });
    }
  });
});

Deno.test("health: an unknown page is a 404 in HTML", async () => {
  await withTestDatabase(async ({ sql }) => {
    const res = await appFor(sql).fetch(
      new Request("http://127.0.0.1/no/such/page?<b>"),
    );
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    const body = await res.text();
    assert.ok(body.startsWith("<!doctype html>"), body.slice(0, 40));
    assert.match(body, /<h1>Not found<\/h1>/);
    assert.match(body, /<code>\/no\/such\/page<\/code>/);
  });
});
