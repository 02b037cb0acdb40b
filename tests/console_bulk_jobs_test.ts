/**
 * Bulk actions over more than 100 dead letters run as jobs: 202 with the
 * job's id, worked through oldest first at the chosen rate by the job loop,
 * readable and cancellable through the API, and resumed by another process
 * after a restart without acting on any row twice.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersSettle,
  eventually,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { copyDeadLetter, jobOf, jobSettles } from "./_console_ops.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";

/** One real dead letter of the kitchen and `n - 1` copies of it. */
async function deadLetters(
  client: Client,
  sql: Parameters<typeof copyDeadLetter>[0],
  n: number,
) {
  const { status } = await client.json("PUT", "/api/console/faults", {
    kitchenRefuses: true,
  });
  assert.equal(status, 200);
  await placeOrderVia(client);
  const [dead] = await deadLettersSettle(client, 1, "subscriber=kitchen");
  const copies = await copyDeadLetter(sql, dead.id, n - 1);
  return [dead.id, ...copies];
}

Deno.test("bulk job: over 100 rows a redrive is a job at the chosen rate; every row redriven once, oldest first; the operator row counts them", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Bulk operator");
    const ids = await deadLetters(client, t.at("orders"), 150);

    const dry = await client.json("POST", "/api/console/dead-letters/redrive", {
      subscriber: "kitchen",
      dryRun: true,
    });
    assert.deepEqual([dry.status, dry.body.count], [200, 150]);

    const bad = await client.json<{ issues: { path: string }[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "kitchen", ratePerSecond: 0 },
    );
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.issues.map((i) => i.path), ["ratePerSecond"]);

    const started = await client.json<{ jobId: string; count: number }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "kitchen", ratePerSecond: 100 },
    );
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.count, 150);
    const first = await jobOf(client, started.body.jobId);
    assert.equal(first.total, 150);

    const job = await jobSettles(client, started.body.jobId, "done");
    assert.deepEqual([job.done, job.total, job.changed], [150, 150, 150]);

    // Each row redriven exactly once, by the operator, oldest first.
    const actions = await t.at("orders")<
      { delivery_id: string; actor: string }[]
    >`
      select delivery_id, actor from queue.actions
       where action = 'redrive' order by id`;
    assert.deepEqual(actions.map((a) => Number(a.delivery_id)), ids);
    assert.ok(actions.every((a) => a.actor === "Bulk operator"));

    const { body: log } = await client.json<{
      items: { action: string; count: number; jobId: string | null }[];
    }>("GET", "/api/console/actions");
    assert.deepEqual(
      // The fault switches flipped to make the dead letters are logged too.
      log.items.filter((a) => a.action !== "fault").map((a) => [
        a.action,
        a.count,
        a.jobId,
      ]),
      [["redrive", 150, started.body.jobId]],
    );

    // Another sandbox cannot read it; a malformed id is a 404 too.
    const other = t.client();
    await signIn(other, "Other");
    for (const id of [started.body.jobId, "nope"]) {
      const { status } = await other.json("GET", `/api/console/jobs/${id}`);
      assert.equal(status, 404);
    }
  });
});

Deno.test("bulk job: cancelled, it stops where it was and says so; the cancel has its operator row", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Cancelling operator");
    await deadLetters(client, t.at("orders"), 120);
    const started = await client.json<{ jobId: string }>(
      "POST",
      "/api/console/dead-letters/refuse",
      { subscriber: "kitchen", reason: "old test orders", ratePerSecond: 10 },
    );
    assert.equal(started.status, 202);
    const { jobId } = started.body;
    await eventually("the job under way", async () => {
      return (await jobOf(client, jobId)).done > 0;
    });
    const cancelled = await client.json<{ state: string; done: number }>(
      "POST",
      `/api/console/jobs/${jobId}/cancel`,
    );
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.state, "cancelled");
    assert.ok(cancelled.body.done < 120, JSON.stringify(cancelled.body));

    // Nothing more is refused: the rows refused are the job's done count.
    const [{ n }] = await t.at("orders")<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries where state = 'refused'`;
    assert.equal(n, cancelled.body.done);
    const after = await jobOf(client, jobId);
    assert.deepEqual([after.state, after.done], [
      "cancelled",
      cancelled.body.done,
    ]);

    const { body: log } = await client.json<{
      items: { action: string; count: number }[];
    }>("GET", "/api/console/actions");
    assert.deepEqual(
      log.items.filter((a) => a.action !== "fault").map((a) => [
        a.action,
        a.count,
      ]),
      [
        ["cancel", 120 - cancelled.body.done],
        ["refuse", 120],
      ],
    );
  });
});

Deno.test("bulk job: resumed by the next process after a restart, and no row is acted on twice", async () => {
  await withTestBakery(async (t) => {
    // The kitchen's dead letters, and so the job, are in the queue of
    // OrderPlaced's and OrderPaid's sender.
    const queue = t.at("orders");
    const client = t.client();
    await signIn(client, "Restarting operator");
    const ids = await deadLetters(client, queue, 130);
    const started = await client.json<{ jobId: string }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "kitchen", ratePerSecond: 20 },
    );
    assert.equal(started.status, 202);
    const { jobId } = started.body;
    await eventually("the job under way", async () => {
      return (await jobOf(client, jobId)).done > 0;
    });
    await t.restart(async () => {
      const [held] = await queue<
        { state: string; done: number; lease_owner: string | null }[]
      >`select state, done, lease_owner from console.bulk_jobs
         where id = ${jobId}`;
      assert.equal(held.state, "running");
      assert.ok(held.done < 130);
      // A process that stops hands its lease back.
      assert.equal(held.lease_owner, null);
    });
    await eventually("the job done by the next process", async () => {
      const [row] = await queue<{ state: string }[]>`
        select state from console.bulk_jobs where id = ${jobId}`;
      return row.state === "done";
    }, 30_000);
    const [done] = await queue<{ done: number; changed: number }[]>`
      select done, changed from console.bulk_jobs where id = ${jobId}`;
    assert.deepEqual([done.done, done.changed], [130, 130]);
    const actions = await queue<{ delivery_id: string }[]>`
      select delivery_id from queue.actions where action = 'redrive'
       order by id`;
    assert.deepEqual(actions.map((a) => Number(a.delivery_id)), ids);
  });
});

natsTest(
  "bulk job over JetStream: every redriven row is given to the broker again and attempted",
  async () => {
    await withTestBakery(async (t) => {
      const client = t.client();
      await signIn(client, "JetStream operator");
      const ids = await deadLetters(client, t.at("orders"), 110);
      const before = await t.at("orders")<{ id: string; attempts: number }[]>`
      select id, attempts from queue.deliveries
       where id = any(${ids}::bigint[]) order by id`;
      const started = await client.json<{ jobId: string; count: number }>(
        "POST",
        "/api/console/dead-letters/redrive",
        { subscriber: "kitchen", ratePerSecond: 200 },
      );
      assert.deepEqual([started.status, started.body.count], [202, 110]);
      await jobSettles(client, started.body.jobId, "done");
      // The kitchen still refuses: each row went through the broker once
      // more (one attempt) and is dead again, nothing left to republish.
      await eventually("every row attempted once more", async () => {
        const rows = await t.at("orders")<
          {
            attempts: number;
            redrives: number;
            republish_at: Date | null;
            state: string;
          }[]
        >`
        select attempts, redrives, republish_at, state from queue.deliveries
         where id = any(${ids}::bigint[]) order by id`;
        return rows.every((r, i) =>
          r.attempts === before[i].attempts + 1 && r.redrives === 1 &&
          r.republish_at === null && r.state === "dead"
        );
      }, 30_000);
    }, {
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: testStream(),
    });
  },
);
