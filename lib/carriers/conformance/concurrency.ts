/**
 * Two relays and two sets of consumers, each with its own connection pool
 * (and over JetStream its own NATS connection) as two processes would have,
 * over 2,000 messages to three receivers: every message reaches every
 * receiver, every effect happens once, and no row is worked by two holders
 * of one lease.
 */
import assert from "node:assert/strict";
import {
  type Answer,
  placeOrders,
  RECEIVERS,
  SENDER,
  testDispatcher,
} from "./services.ts";
import { count, waitForDeliveries } from "./rows.ts";
import { startWorkers } from "./workers.ts";
import { connect, type Sql } from "../../db/connect.ts";
import type { OutgoingMessage, Queue } from "../../ledger/mod.ts";
import type { Moved, Shortcut } from "../carrier.ts";
import { assertDelivered } from "./broker.ts";
import type { Scenario } from "./harness.ts";

const MESSAGES = 2_000;
/** Orders per sender transaction, and transactions committed at once. */
const PER_TX = 100;
const PARALLEL_TX = 4;

/** A worker process's view: its pool, and what it published and delivered. */
interface Process {
  sql: Sql;
  /** Outbox rows its relay published (moved, or published the long way). */
  published: number;
  answers: Answer[];
}

/**
 * Moves of at most this many rows: a wave of 400 rows is then several moves,
 * and both relays, woken by the same notification, take part in it. With the
 * relay's own 1,000 a wave fits in one move, and the relay that woke first
 * could take every wave (seen once: 2,000 and 0). A transport without moves
 * (JetStream) is claimed 100 rows at a time, which shares a wave already.
 */
const MOVE_CHUNK = 50;

/** The queue, counting what each publish stored in `p.published`. */
function countingQueue(inner: Queue, p: Process): Queue {
  return {
    async publish(messages: OutgoingMessage[]) {
      const fresh = await inner.publish(messages);
      // Counted only once the queue has them: a publish that threw would
      // be retried, and that is not a double publish.
      p.published += messages.length;
      return fresh;
    },
  };
}

/** The relay's move, in moves of MOVE_CHUNK, counting the rows moved. */
function chunkingShortcut(inner: Shortcut, p: Process): Shortcut {
  return {
    move: async (service, limit, options) => {
      // Up to `limit` rows, as the relay asked, in moves of MOVE_CHUNK; each
      // move is its own transaction, so the other relay's moves run between.
      let total: Moved | undefined;
      while (true) {
        const chunk = Math.min(MOVE_CHUNK, limit - (total?.rows ?? 0));
        const moved = await inner.move(service, chunk, options);
        p.published += moved.rows;
        total = total ? addMoved(total, moved) : moved;
        if (moved.rows < chunk || total.rows >= limit) return total;
      }
    },
  };
}

function addMoved(a: Moved, b: Moved): Moved {
  return {
    rows: a.rows + b.rows,
    published: a.published + b.published,
    tenantIds: [...new Set([...a.tenantIds, ...b.tenantIds])],
    lagSeconds: [...a.lagSeconds, ...b.lagSeconds],
    traceparents: [...a.traceparents, ...b.traceparents],
    busy: a.rows + b.rows === 0 && (a.busy || b.busy),
    handed: [...a.handed, ...b.handed],
    leftPending: a.leftPending || b.leftPending,
  };
}

export const concurrencyScenarios: Scenario[] = [{
  name:
    "two relays and two consumer sets over 2,000 messages: everything delivered everywhere, each effect once, no shared lease",
  run: async (
    { db, sql, at, route, tenantId, carrier, harness, stream, view },
  ) => {
    const second = connect(db.url, { max: 10, applicationName: "test-b" });
    // Its receivers apply where the first process's do (in the split
    // layout, each in its own database).
    route(second);
    const processes: Process[] = [
      { sql, published: 0, answers: [] },
      { sql: second, published: 0, answers: [] },
    ];
    const started = processes.map((p) =>
      startWorkers(harness, { url: db.url, sql: p.sql }, {
        transport: carrier,
        stream,
        wrapQueue: (queue) => countingQueue(queue, p),
        wrapShortcut: (shortcut) => chunkingShortcut(shortcut, p),
        dispatcher: testDispatcher(p.sql, {
          onAnswer: (a) => p.answers.push(a),
        }),
        // Nothing here should fail; a retry would show up as a second attempt.
        retryDelaysMs: [50, 50, 50],
        // Ownership is what is tested, not speed: on a loaded machine a
        // batch of ten may wait past the tests' usual 2 s, and a timeout
        // would be a retry (the production timeout is 5 s).
        timeoutMs: 10_000,
      })
    );
    const stops: (() => Promise<void>)[] = [];
    try {
      for (const s of started) stops.push((await s.messaging).stop);
      const owners = new Set<unknown>(
        await Promise.all(started.map(async (s) => (await s.messaging).owner)),
      );
      assert.equal(owners.size, 2);

      // The orders arrive while both sets of workers run.
      const ids = Array.from(
        { length: MESSAGES },
        (_, i) => `O${String(i).padStart(5, "0")}`,
      );
      const batches: string[][] = [];
      for (let i = 0; i < ids.length; i += PER_TX) {
        batches.push(ids.slice(i, i + PER_TX));
      }
      for (let i = 0; i < batches.length; i += PARALLEL_TX) {
        await Promise.all(
          batches.slice(i, i + PARALLEL_TX).map((b) =>
            placeOrders(sql, tenantId, b)
          ),
        );
      }
      const total = MESSAGES * RECEIVERS.length;
      await waitForDeliveries(sql, "done", total, 120_000);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
      await second.end({ timeout: 5 });
    }

    const total = MESSAGES * RECEIVERS.length;
    // The sender: every row published once, none retried.
    assert.equal(
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      MESSAGES,
    );
    assert.equal(
      await count(sql, `${SENDER}.outbox`, sql`attempts > 0`),
      0,
      JSON.stringify(
        started.flatMap((s) =>
          s.lines.filter((l) => l.event === "relay_error")
        ),
      ),
    );
    // Every row is published (above), and the relays published as many as
    // there are rows between them: none twice.
    const published = processes.reduce((n, p) => n + p.published, 0);
    assert.equal(published, MESSAGES, "a row was published twice");
    assert.ok(
      processes.every((p) => p.published > 0),
      `publishes per relay: ${processes.map((p) => p.published)}`,
    );

    // The queue: one message per row, one delivery per receiver, each done
    // after exactly one attempt.
    assert.equal(await count(sql, "queue.messages"), MESSAGES);
    assert.equal(await count(sql, "queue.deliveries"), total);
    // No delivery without its message (no foreign key checks it).
    assert.equal(
      await count(
        sql,
        "queue.deliveries",
        sql`message_id not in (select message_id from queue.messages)`,
      ),
      0,
    );
    assert.equal(
      await count(
        sql,
        "queue.deliveries",
        sql`state = 'done' and attempts = 1`,
      ),
      total,
      JSON.stringify(
        await sql`select attempts, last_status, subscriber, count(*)::int as n,
                         min(a.error) as error, min(a.status) as status
                    from queue.deliveries d left join queue.attempts a
                      on a.delivery_id = d.id
                   where d.attempts > 1 group by 1, 2, 3`,
      ),
    );
    const [attempts] = await sql<{ n: number; deliveries: number }[]>`
      select count(*)::int as n, count(distinct delivery_id)::int as deliveries
        from queue.attempt_log where outcome = 'done' and attempt = 1`;
    assert.deepEqual({ ...attempts }, { n: total, deliveries: total });
    assert.equal(await count(sql, "queue.attempt_log"), total);
    // Each a success at its first attempt: told by its delivery's row,
    // with no attempt row of its own.
    assert.equal(await count(sql, "queue.attempts"), 0);

    // The receivers: every message applied once, by the job it asked for.
    // The messages are read from the queue and each receiver's jobs from
    // its own database: no statement joins two databases.
    const sent = new Set(
      (await sql<{ m: string }[]>`
        select message_id || ' ' || aggregate_id as m from queue.messages`)
        .map((row) => row.m),
    );
    for (const r of RECEIVERS) {
      assert.equal(await count(sql, `${r}.jobs`), MESSAGES, r);
      assert.equal(await count(sql, `${r}.inbox`, sql`status = 200`), MESSAGES);
      assert.equal(await count(sql, `${r}.refusals`), 0, r);
      const jobs = await at(r)<{ m: string }[]>`
        select message_id || ' ' || order_id as m from ${sql(r + ".jobs")}`;
      const matched = jobs.filter((j) => sent.has(j.m)).length;
      assert.equal(matched, MESSAGES, r);
    }
    const answers = processes.flatMap((p) => p.answers);
    assert.equal(answers.length, total, "a delivery was sent twice");
    assert.ok(
      answers.every((a) => a.status === 200 && a.body.duplicate === false),
      "a receiver answered other than 200, or saw a duplicate",
    );
    assert.ok(
      processes.every((p) => p.answers.length > 0),
      `deliveries per consumer set: ${processes.map((p) => p.answers.length)}`,
    );
    for (const s of started) {
      assert.deepEqual(
        s.lines.filter((l) =>
          ["lease_lost", "loop_error", "relay_error"].includes(String(l.event))
        ),
        [],
      );
    }
    // Over JetStream: one message per delivery in the stream, and each
    // receiver's durable consumer, shared by the two processes, delivered
    // each once.
    if (view) {
      assert.equal(await view.count(), total);
      await assertDelivered(
        view,
        Object.fromEntries(RECEIVERS.map((r) => [r, MESSAGES])),
      );
    }
  },
}];
