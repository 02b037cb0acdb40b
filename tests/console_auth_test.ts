/**
 * The console is for signed-in operators: every `/api/console/*` endpoint and
 * the kitchen board answer 401 without a session and to a guest (a visitor
 * who only ordered), and answer normally once the visitor signs in.
 */
import assert from "node:assert/strict";
import {
  Client,
  deadLettersSettle,
  orderSettles,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue } from "./_console_ops.ts";

interface Call {
  method: string;
  path: string;
  json?: unknown;
  /** The status once signed in. */
  ok: number;
}

const NO_JOB = "01900000-0000-7000-8000-000000000000";

/**
 * Every console call, with ids from the caller's sandbox: `done` is a
 * delivery that went through, `redrive` and `refuse` are dead letters.
 */
function consoleCalls(ids: { done: number; redrive: number; refuse: number }) {
  return [
    { method: "GET", path: "/api/console/overview", ok: 200 },
    { method: "GET", path: "/api/console/outbox", ok: 200 },
    { method: "GET", path: "/api/console/deliveries", ok: 200 },
    { method: "GET", path: "/api/console/deliveries?state=dead", ok: 200 },
    { method: "GET", path: `/api/console/deliveries/${ids.done}`, ok: 200 },
    { method: "GET", path: "/api/console/dead-letters", ok: 200 },
    {
      method: "GET",
      path: "/api/console/dead-letters?subscriber=kitchen",
      ok: 200,
    },
    { method: "GET", path: "/api/console/closure", ok: 200 },
    {
      method: "GET",
      path: "/api/console/closure/rows?subscriber=kitchen&state=closed",
      ok: 200,
    },
    { method: "GET", path: "/api/console/faults", ok: 200 },
    { method: "GET", path: "/api/kitchen/board", ok: 200 },
    {
      method: "PUT",
      path: "/api/console/faults",
      json: { kitchenSlow: false },
      ok: 200,
    },
    {
      method: "POST",
      path: `/api/console/dead-letters/${ids.redrive}/redrive`,
      ok: 202,
    },
    {
      method: "POST",
      path: `/api/console/dead-letters/${ids.refuse}/refuse`,
      json: { reason: "test order, nobody will bake it" },
      ok: 200,
    },
    {
      method: "POST",
      path: "/api/console/dead-letters/redrive",
      json: { subscriber: "receipts" },
      ok: 202,
    },
    {
      method: "POST",
      path: "/api/console/dead-letters/refuse",
      json: { subscriber: "receipts", reason: "none to refuse" },
      ok: 200,
    },
    { method: "GET", path: "/api/console/failure-groups", ok: 200 },
    {
      method: "POST",
      path: "/api/console/dead-letters/redrive",
      json: { subscriber: "receipts", dryRun: true },
      ok: 200,
    },
    { method: "GET", path: "/api/console/actions", ok: 200 },
    { method: "GET", path: "/api/console/search?q=kitchen", ok: 200 },
    // Ids that are not there once signed in: 404, never before 401.
    { method: "GET", path: `/api/console/jobs/${NO_JOB}`, ok: 404 },
    { method: "POST", path: `/api/console/jobs/${NO_JOB}/cancel`, ok: 404 },
    {
      method: "POST",
      path: `/api/console/dead-letters/${ids.done}/supersede`,
      json: { payload: {}, reason: "not a dead letter" },
      ok: 404,
    },
  ] satisfies Call[];
}

/** Makes every call with `client`; returns "METHOD path -> status" lines. */
async function statuses(client: Client, calls: Call[]) {
  const out: string[] = [];
  for (const call of calls) {
    const { status } = await client.json(call.method, call.path, call.json);
    out.push(`${call.method} ${call.path} -> ${status}`);
  }
  return out;
}

const expect = (calls: Call[], status?: number) =>
  calls.map((c) => `${c.method} ${c.path} -> ${status ?? c.ok}`);

Deno.test("console auth: 401 without a session and for a guest, 200 once signed in", async () => {
  await withTestBakery(async (t) => {
    // A guest: ordered from the storefront, never signed in.
    const guest = t.client();
    const { orderId } = await placeOrderVia(guest);
    const order = await orderSettles(guest, orderId, "placed", 5_000);
    const session = await guest.json<{ name: string | null }>(
      "GET",
      "/api/session",
    );
    assert.equal(session.status, 200);
    assert.equal(session.body.name, null);
    // Ids of the guest's own sandbox: a done delivery (the kitchen's).
    const [kitchen] = await t.at("orders")<{ id: string }[]>`
      select id from queue.deliveries
       where aggregate_id = ${orderId} and subscriber = 'kitchen'`;
    const done = Number(kitchen.id);
    assert.equal(
      order.deliveries.filter((d) => d.state === "done").length,
      3,
    );

    const before = consoleCalls({ done, redrive: done, refuse: done });
    const anonymous = t.client();
    assert.deepEqual(await statuses(anonymous, before), expect(before, 401));
    assert.deepEqual(await statuses(guest, before), expect(before, 401));
    // The refused calls changed nothing.
    const [faults] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from platform.faults`;
    assert.equal(faults.n, 0);
    assert.equal(
      await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.actions`,
      ),
      0,
    );

    // Signed in, the guest keeps its sandbox and may use the console. Two
    // dead letters of its own for the redrive and refuse calls.
    await signIn(guest, "Operator A");
    const put = await guest.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
      customersRefuses: true,
    });
    assert.equal(put.status, 200);
    await placeOrderVia(guest);
    const dead = await deadLettersSettle(guest, 2);
    const kitchenDead = dead.find((d) => d.subscriber === "kitchen")!;
    const customersDead = dead.find((d) => d.subscriber === "customers")!;
    assert.ok(kitchenDead && customersDead, JSON.stringify(dead));

    const after = consoleCalls({
      done,
      redrive: kitchenDead.id,
      refuse: customersDead.id,
    });
    assert.deepEqual(await statuses(guest, after), expect(after));

    // And the anonymous client is still shut out.
    assert.deepEqual(await statuses(anonymous, after), expect(after, 401));
  });
});
