/**
 * The labs are shared fairly (services/labs/lock.ts): a visitor who fires
 * twenty Queue Lab runs at once gets one run and nineteen 429s with
 * Retry-After, and another visitor's ledger run answers at once meanwhile;
 * the Queue Lab's line is bounded, a full line is a 429 with Retry-After
 * too, and nobody admitted waits long.
 */
import assert from "node:assert/strict";
import { LANES } from "../services/labs/lock.ts";
import { type Client, eventually, signIn, withTestBakery } from "./_app.ts";

const QUEUE_RUN = {
  orders: 10,
  workers: 3,
  crash: "after-print-before-ack",
  receiverRemembers: false,
};

/** A lab run: its status, Retry-After, body, and how long it took. */
async function timed(client: Client, path: string, json?: unknown) {
  const started = performance.now();
  const response = await client.fetch(path, { method: "POST", json });
  const body = await response.json();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body,
    ms: Math.round(performance.now() - started),
  };
}

Deno.test("labs fair share: one visitor's flood of Queue Lab runs gets one run; another's ledger run answers within 2 s", async () => {
  await withTestBakery(async (t) => {
    const a = t.client();
    const b = t.client();
    await signIn(a, "Flood");
    await signIn(b, "Quiet");

    const flood = Array.from(
      { length: 20 },
      () => timed(a, "/api/labs/queue", QUEUE_RUN),
    );
    // B asks once A's first run is going: its printer deliveries exist.
    await eventually("A's Queue Lab run to start", async () => {
      const [row] = await t.sql<{ n: number }[]>`
        select count(*)::int as n from queue.messages
         where source = 'lab_queue'`;
      return row.n > 0;
    });
    const ledger = await timed(b, "/api/labs/ledger/lost-ack");
    const runs = await Promise.all(flood);

    assert.equal(ledger.status, 200, JSON.stringify(ledger.body));
    assert.equal(ledger.body.scenario, "lost-ack");
    // Before the gate, B waited behind all twenty of A's runs: 20 s.
    assert.ok(ledger.ms < 2_000, `B's ledger run took ${ledger.ms} ms`);

    const ok = runs.filter((r) => r.status === 200);
    const refused = runs.filter((r) => r.status === 429);
    assert.equal(ok.length, 1, JSON.stringify(runs.map((r) => r.status)));
    assert.equal(refused.length, 19);
    for (const r of refused) {
      assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
      assert.match(r.body.error, /still going; one run at a time/);
    }
    // The run that went is whole: ten orders, one printed twice.
    assert.equal(ok[0].body.tickets, 11);
    console.log(
      `flood: B's ledger run ${ledger.ms} ms; A's run ${ok[0].ms} ms; ` +
        `refusals answered in ${
          Math.max(...refused.map((r) => r.ms))
        } ms at most`,
    );

    // Once A's run is done, A may run again.
    const again = await timed(a, "/api/labs/queue", QUEUE_RUN);
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });
});

Deno.test("labs fair share: the Queue Lab's line is bounded; a full line is a 429 with Retry-After", async () => {
  await withTestBakery(async (t) => {
    const visitors = 7;
    const clients: Client[] = [];
    for (let i = 0; i < visitors; i++) {
      const client = t.client();
      await signIn(client, `Visitor ${i + 1}`);
      clients.push(client);
    }
    // Fifty orders keep a run going long enough that all seven ask while
    // the first is still running.
    const runs = await Promise.all(
      clients.map((c) =>
        timed(c, "/api/labs/queue", { ...QUEUE_RUN, orders: 50 })
      ),
    );
    const ok = runs.filter((r) => r.status === 200);
    const refused = runs.filter((r) => r.status === 429);
    const { concurrency, maxWaiting, maxWaitMs } = LANES.queue;
    assert.equal(ok.length + refused.length, visitors);
    assert.ok(ok.length >= 1, "the first run goes");
    assert.ok(
      ok.length <= concurrency + maxWaiting,
      `${ok.length} runs admitted, ${JSON.stringify(runs.map((r) => r.ms))}`,
    );
    for (const r of refused) {
      assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
      assert.match(r.body.error, /queue lab (is|stayed) busy/);
    }
    // An admitted run waited at most maxWaitMs for its turn: the whole
    // answer is that plus its own run (a few seconds on a loaded machine).
    const longest = Math.max(...ok.map((r) => r.ms));
    assert.ok(longest < maxWaitMs + 15_000, `an admitted run took ${longest}`);
    console.log(
      `line: ${ok.length} admitted (${ok.map((r) => r.ms).join(", ")} ms), ` +
        `${refused.length} refused (Retry-After ${
          refused.map((r) => r.retryAfter).join(", ")
        })`,
    );
  });
});
