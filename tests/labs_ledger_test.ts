/**
 * The failure ledger through its JSON API, on the whole bakery (its
 * workers running beside the lab): the exact figures of every scenario,
 * each counted from the rows, each run from a clean slate; the rows a run
 * leaves; another sandbox sees none of them and keeps its own; unknown
 * scenarios, signed-out callers and cross-site posts are refused.
 */
import assert from "node:assert/strict";
import { type Client, signIn, withTestBakery } from "./_app.ts";

interface LedgerJson {
  scenario: string;
  sender: { orders: number; pending: number };
  receiver: { inbox: number; jobs: number; refusals: number };
  explanation: string;
}

/** scenario -> [orders, pending, inbox, jobs, refusals] */
const EXPECTED: Record<string, [number, number, number, number, number]> = {
  "fail-before-commit": [0, 0, 0, 0, 0],
  "stop-before-publish": [1, 1, 0, 0, 0],
  "receiver-rollback": [1, 1, 0, 0, 0],
  "lost-ack": [1, 1, 1, 1, 0],
  "lost-ack-redelivered": [1, 0, 1, 1, 0],
  "no-outbox": [1, 0, 0, 0, 0],
  "send-first": [0, 0, 1, 1, 0],
  "contradictory-instruction": [1, 0, 1, 1, 1],
  // M8 and M7 both in the inbox (M7 as stale), no job scheduled
  "stale-version": [1, 0, 2, 0, 0],
  // M7 refused: its inbox row says 422, so none accepted
  "replay-horizon": [1, 0, 0, 0, 1],
};

async function run(client: Client, scenario: string) {
  const { status, body } = await client.json<LedgerJson>(
    "POST",
    `/api/labs/ledger/${scenario}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

interface RowsJson {
  rows: {
    orders: { state: string }[];
    outbox: { label: string; state: string; lastError: string | null }[];
    inbox: { status: number; outcome: string }[];
    jobs: { label: string; state: string }[];
    refusals: { reason: string }[];
  };
}

async function rows(client: Client) {
  const { status, body } = await client.json<RowsJson>(
    "GET",
    "/api/labs/ledger",
  );
  assert.equal(status, 200);
  return body.rows;
}

Deno.test("ledger: every scenario's figures come out exactly, from the rows, each from a clean slate", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    // Twice over, in an order where each scenario follows one that leaves
    // different rows: a run must not see the one before.
    const names = Object.keys(EXPECTED);
    for (const name of [...names, ...names.reverse()]) {
      const body = await run(client, name);
      assert.deepEqual(Object.keys(body).sort(), [
        "explanation",
        "receiver",
        "scenario",
        "sender",
      ]);
      const [orders, pending, inbox, jobs, refusals] = EXPECTED[name];
      assert.deepEqual(
        {
          scenario: body.scenario,
          sender: body.sender,
          receiver: body.receiver,
        },
        {
          scenario: name,
          sender: { orders, pending },
          receiver: { inbox, jobs, refusals },
        },
        name,
      );
      assert.ok(body.explanation.length > 20);
    }
  });
});

Deno.test("ledger: the rows behind the figures (the lost ack, the refusal, the stale creation, the horizon)", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");

    await run(client, "lost-ack");
    let r = await rows(client);
    assert.equal(r.outbox[0].state, "pending");
    assert.match(r.outbox[0].lastError ?? "", /answer never reached the relay/);
    assert.deepEqual(r.jobs.map((j) => [j.label, j.state]), [
      ["M7", "scheduled"],
    ]);

    await run(client, "lost-ack-redelivered");
    r = await rows(client);
    // Sent and answered: owed no more, so the outbox row is gone.
    assert.deepEqual(r.outbox, []);
    assert.equal(r.inbox.length, 1);
    assert.equal(r.jobs.length, 1);

    await run(client, "contradictory-instruction");
    r = await rows(client);
    assert.deepEqual(r.outbox, []);
    assert.deepEqual(r.inbox.map((i) => i.status).sort(), [200, 422]);
    assert.match(r.refusals[0].reason, /M9 asks for a second job for O42/);
    assert.deepEqual(r.jobs.map((j) => [j.label, j.state]), [
      ["M7", "scheduled"],
    ]);

    await run(client, "stale-version");
    r = await rows(client);
    assert.deepEqual(r.orders.map((o) => o.state), ["cancelled"]);
    assert.deepEqual(r.jobs.map((j) => [j.label, j.state]), [
      ["M8", "cancelled"],
    ]);
    assert.ok(r.inbox.some((i) => /stale/.test(i.outcome)), "M7 was stale");

    await run(client, "replay-horizon");
    r = await rows(client);
    assert.match(r.refusals[0].reason, /older than the replay horizon/);
    assert.equal(r.jobs.length, 0);
  });
});

Deno.test("ledger: another sandbox sees none of the rows, and keeps its own", async () => {
  await withTestBakery(async (t) => {
    const ada = t.client();
    const bob = t.client();
    await signIn(ada, "Ada");
    await signIn(bob, "Bob");
    // Bob's pending M7 must not be relayed by Ada's runs.
    await run(bob, "stop-before-publish");
    await run(ada, "lost-ack-redelivered");
    const bobs = await rows(bob);
    assert.deepEqual(bobs.outbox.map((o) => o.state), ["pending"]);
    assert.equal(bobs.inbox.length, 0);
    assert.equal(bobs.jobs.length, 0);
    // Ada's run started from a clean slate of her rows only.
    const adas = await rows(ada);
    assert.equal(adas.orders.length, 1);
    assert.equal(adas.inbox.length, 1);
    // Two sandboxes running at once get their own figures.
    const [a, b] = await Promise.all([
      run(ada, "send-first"),
      run(bob, "contradictory-instruction"),
    ]);
    assert.deepEqual(a.receiver, { inbox: 1, jobs: 1, refusals: 0 });
    assert.deepEqual(b.receiver, { inbox: 1, jobs: 1, refusals: 1 });
    assert.deepEqual(a.sender, { orders: 0, pending: 0 });
  });
});

Deno.test("ledger: an unknown scenario is 404, signed out is 401, cross-site is 403", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const signedOut = await client.json("POST", "/api/labs/ledger/lost-ack");
    assert.equal(signedOut.status, 401);
    await signIn(client, "Ada");
    const unknown = await client.json<{ error: string }>(
      "POST",
      "/api/labs/ledger/drop-everything",
    );
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.error, /no ledger scenario "drop-everything"/);
    const page = await client.fetch("/labs/ledger/drop-everything", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `_csrf=${await csrf(client)}`,
    });
    assert.equal(page.status, 404);
    await page.body?.cancel();
    const crossSite = await client.withOrigin("https://evil.example")
      .json("POST", "/api/labs/ledger/lost-ack");
    assert.equal(crossSite.status, 403);
    const noToken = await client.fetch("/labs/ledger/lost-ack", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "_csrf=wrong",
    });
    assert.equal(noToken.status, 403);
    await noToken.body?.cancel();
    // Nothing ran.
    assert.equal((await rows(client)).orders.length, 0);
    const twin = await client.json<LedgerJson & RowsJson>(
      "GET",
      "/api/labs/ledger",
    );
    assert.deepEqual(twin.body.sender, { orders: 0, pending: 0 });
    assert.deepEqual(twin.body.receiver, { inbox: 0, jobs: 0, refusals: 0 });
  });
});

Deno.test("ledger: the page runs a scenario by a form post and shows its rows", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    const response = await client.fetch("/labs/ledger/lost-ack", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `_csrf=${await csrf(client)}`,
      redirect: "manual",
    });
    assert.equal(response.status, 303);
    await response.body?.cancel();
    const location = response.headers.get("location") ?? "";
    assert.match(location, /^\/labs\/ledger\?ran=lost-ack/);
    const page = await (await client.fetch(location)).text();
    assert.match(page, /data-testid="ledger-result"/);
    assert.match(page, /answer never reached the relay/);
    assert.match(page, /Sender: <strong>1<\/strong> order\(s\)/);
  });
});

async function csrf(client: Client): Promise<string> {
  const { body } = await client.json<{ csrfToken: string }>(
    "GET",
    "/api/session",
  );
  return body.csrfToken;
}
