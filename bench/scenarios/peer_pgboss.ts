/**
 * peer_pgboss: a second peer, pg-boss (npm, pinned in deno.json; imported
 * from bench/ only), on the same server as every other scenario, so that
 * the targets against the peer (issue 19) also read against it (issue 55):
 *
 * - order_send_8: the bakery's order statement without its outbox row and
 *   wake-up, and pg-boss's `send` of the OrderPlaced envelope in the same
 *   transaction through its `db` option (bench/order_variants.ts
 *   placeWithSend), 8 clients, one sandbox each, as the write scenario
 *   runs its orders. The queue has `notify` on, so that the send wakes a
 *   worker as the outbox's wake-up and graphile-worker's add_job do. No
 *   worker runs; the jobs are deleted every 100 ms, as the peer scenario
 *   does.
 * - drain_handler: the peer scenario's handler (an inbox insert and an
 *   effect upsert in one transaction, on a pool of the handler's own), at
 *   pg-boss's settings for throughput (see {@link WORK}), timed from the
 *   commit of one `insert` of every job to the last handler finished;
 *   `plan.peerJobs` jobs, as the peer drains.
 *
 * pg-boss installs its schema (`pgboss`) in each scenario database at
 * `start()`; the databases are dropped after.
 */
import pg from "pg";
import { type Db, type Job, PgBoss } from "pg-boss";
import { connect, type Sql } from "../../lib/db/connect.ts";
import type { ServiceTx } from "../../lib/db/service.ts";
import type { Ctx } from "../context.ts";
import { closedLoop } from "../load.ts";
import { placeWithSend } from "../order_variants.ts";
import { OrderSource } from "../orders.ts";
import { applyJob, createHandlerTables, Handled, KEYS } from "../peer_drain.ts";
import { type Figure, figure } from "../report.ts";
import { sleep } from "../stats.ts";

/** The version in deno.json, for the results. */
const VERSION = "pg-boss 12.38.1";

/**
 * pg-boss's settings for throughput, from its docs (Workers, `work()`):
 * `batchSize` fetches and completes many jobs in one statement each;
 * `localConcurrency` runs that many workers in this process, each polling
 * and processing its batches on its own; `burstWhenBatchFull` fetches again
 * at once while batches come back full, instead of waiting out the polling
 * interval (2 s by default) after each one. 24 workers of 20 jobs hold 480
 * jobs and run 24 handlers at a time, as the peer's graphile-worker (24
 * concurrent jobs, a local queue of 500). Each worker runs its batch's
 * handlers one after another, each in a transaction of its own.
 */
const WORK = {
  batchSize: 20,
  localConcurrency: 24,
  burstWhenBatchFull: true,
} as const;

/**
 * The instance: LISTEN/NOTIFY on, so that a queue with `notify` wakes its
 * idle workers at the commit of a job instead of at their next poll; its
 * pool at pg-boss's default size (10).
 */
const INSTANCE = { useListenNotify: true } as const;

/** Figures of this scenario that later ones compare to, by name. */
function share(ctx: Ctx, name: string, value: number | null) {
  if (value !== null) ctx.shared.baselines.set(`peer_pgboss.${name}`, value);
}

/**
 * A pg-boss instance on `url` whose errors are shown, except once its
 * database is being dropped (a connection ended by the drop). pg-boss
 * emits a pool's error as its own `error` event, and an `error` event
 * nobody listens to would end the process.
 */
function instance(url: string, state: { dropping: boolean }) {
  const boss = new PgBoss({ connectionString: url, ...INSTANCE });
  boss.on("error", (error) => {
    if (!state.dropping) console.error(`pg-boss: ${error.message}`);
  });
  return boss;
}

/**
 * pg-boss's `db` option over a service transaction: its statements run on
 * the transaction's connection, inside it, prepared as the bakery's are.
 */
function inTransaction(tx: ServiceTx): Db {
  return {
    executeSql: async (text, values) => ({
      rows: await tx.sql.unsafe(text, (values ?? []) as never[], {
        prepare: true,
      }),
    }),
  };
}

/**
 * Lets the orders service's role send pg-boss jobs: its schema, its tables
 * (the job table and the queue table its insert reads) and its functions.
 */
async function grantSend(sql: Sql) {
  await sql`grant usage on schema pgboss to orders`;
  await sql`grant select, insert on all tables in schema pgboss to orders`;
  await sql`grant execute on all functions in schema pgboss to orders`;
}

export async function peerPgboss(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const figures: Figure[] = [];
  const cpuUsPerOp: Record<string, Record<string, number>> = {};

  // order_send_8, on a database of its own as each write run has.
  {
    progress.step("peer_pgboss: order with send, 8 clients");
    const db = await ctx.server.database("peer_pgboss_orders");
    const state = { dropping: false };
    const boss = instance(db.url, state);
    const sql = connect(db.url, { max: 8, applicationName: "bench" });
    let sweeping = true;
    let sweeper: Promise<void> | undefined;
    try {
      await boss.start();
      await boss.createQueue("order_placed", { notify: true });
      await grantSend(db.sql);
      sweeper = (async () => {
        while (sweeping) {
          await db.sql`delete from pgboss.job`;
          await sleep(100);
        }
      })();
      const sources = Array.from(
        { length: 8 },
        (_, i) => new OrderSource(sql, `pgboss-${i}`),
      );
      const r = await closedLoop({
        clients: 8,
        warmupMs: plan.warmupMs,
        durationMs: plan.writeMs,
        op: (c) =>
          placeWithSend(sql, sources[c], async (tx, envelope) => {
            const id = await boss.send("order_placed", envelope, {
              db: inTransaction(tx),
            });
            if (id === null) throw new Error("pg-boss sent no job");
          }),
        progress,
        cpu: ctx.cpuNow,
      });
      if (r.cpuUsPerOp) cpuUsPerOp.order_send_8 = r.cpuUsPerOp;
      progress.note(`order with send, 8 clients: ${Math.round(r.rate)}/s`);
      share(ctx, "order_send_8", r.rate);
      figures.push(figure("order_send_8", r.rate, "orders/s", {
        note:
          "the order statement without its outbox row and wake-up, and pg-boss send (db option) in the same transaction",
      }));
    } finally {
      sweeping = false;
      await sweeper;
      await boss.stop({ graceful: false }).catch(() => {});
      await sql.end({ timeout: 5 });
      state.dropping = true;
      await db.drop();
    }
  }

  // drain_handler, one instance on a database of its own.
  const jobs = plan.peerJobs;
  const db = await ctx.server.database("peer_pgboss_drain");
  const state = { dropping: false };
  const boss = instance(db.url, state);
  // The handler's connections, as graphile-worker's tasks take one from
  // its pool: one per worker.
  const pool = new pg.Pool({
    connectionString: db.url,
    max: WORK.localConcurrency,
  });
  const onError = (error: Error) => {
    if (!state.dropping) console.error(`peer_pgboss pool: ${error.message}`);
  };
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  try {
    await boss.start();
    await boss.createQueue("receive", { notify: true });
    await createHandlerTables(db.sql);

    const handled = new Handled(jobs);
    const receive = async ({ messageId, key }: Receive) => {
      const client = await pool.connect();
      try {
        await applyJob(client, { messageId, key });
      } finally {
        client.release();
      }
      handled.one();
    };
    await boss.work<Receive>("receive", WORK, async (batch: Job<Receive>[]) => {
      for (const job of batch) await receive(job.data);
    });

    progress.step(`peer_pgboss: drain of ${jobs} handler jobs`);
    const t0 = performance.now();
    // One commit inserts them all; the workers, idle until then, are woken
    // by its notification.
    await boss.insert(
      "receive",
      Array.from({ length: jobs }, (_, g) => ({
        data: { messageId: crypto.randomUUID(), key: g % KEYS },
      })),
    );
    const inserted = performance.now();
    await handled.all(progress, plan.drainTimeoutMs);
    const left = await untilCompleted(db.sql, 10_000);
    const [{ inbox }] = await db.sql<{ inbox: number }[]>`
      select count(*)::int as inbox from bench.inbox`;
    if (inbox !== jobs || left !== 0) {
      throw new Error(
        `peer_pgboss drain: ${inbox} inbox rows of ${jobs}, ${left} jobs not completed`,
      );
    }
    const seconds = (handled.lastAt - inserted) / 1000;
    const rate = jobs / seconds;
    progress.note(
      `drain: ${Math.round(rate)} jobs/s over ${
        seconds.toFixed(2)
      } s (inserting took ${((inserted - t0) / 1000).toFixed(2)} s)`,
    );
    share(ctx, "drain_handler", rate);
    figures.push(figure("drain_handler", rate, "jobs/s", {
      note:
        "24 workers of 20-job batches, burst while full; each job an inbox insert and an effect upsert in one transaction",
    }));
    ctx.params = {
      version: `${VERSION} (npm), in the bench process, Deno`,
      instance: { ...INSTANCE, pool: "pg-boss's own, default size (10)" },
      work: WORK,
      queues: "notify: true, the standard policy, the shared job table",
      orderSend:
        "bench/order_variants.ts placeWithSend: the order statement (key, capacity, order, line, event) without the outbox row and its wake-up, and pg-boss send('order_placed', <OrderPlaced envelope>, { db }) on the same transaction (its insert and NOTIFY), the two sent without waiting for each other, then COMMIT; as the orders role; jobs deleted every 100 ms, no worker running",
      drain:
        "jobs inserted by one pg-boss insert() (one statement, one commit) while the workers are idle; timed from that commit answered to the last handler finished; each handler: BEGIN, inbox insert, effect upsert, COMMIT on a pg pool of 24; the batches completed by pg-boss",
      jobs,
      cpuUsPerOp,
    };
  } finally {
    await boss.stop({ graceful: false }).catch(() => {});
    state.dropping = true;
    await pool.end();
    await db.drop();
  }
  return figures;
}

interface Receive {
  messageId: string;
  key: number;
}

/** Jobs not completed once all are, or `timeoutMs` has passed. */
async function untilCompleted(sql: Sql, timeoutMs: number): Promise<number> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from pgboss.job where state <> 'completed'`;
    if (n === 0 || performance.now() > until) return n;
    await sleep(20);
  }
}
