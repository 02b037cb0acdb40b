/**
 * peer: graphile-worker (npm, pinned in deno.json; imported from bench/
 * only), on the same server as every other scenario, so that the targets
 * of issue 19 are ratios to it in the same run:
 *
 * - order_add_job_8: the bakery's order transaction with
 *   `graphile_worker.add_job` in place of the outbox row and its wake-up
 *   (bench/order_variants.ts placeWithAddJob), 8 clients, one sandbox each,
 *   as the write scenario runs its orders; no worker runs, the jobs are
 *   deleted every 100 ms as a worker that keeps up would (the write
 *   scenario's sweeper marks its outbox rows published);
 * - drain_handler: jobs whose task does what a receiver does, an inbox
 *   insert and an effect upsert in one transaction (the handler_plain
 *   baseline's two statements, on the worker's own pool), drained by one
 *   worker with graphile-worker's recommended batched settings (its
 *   performance page: 24 concurrent jobs, a pool of 25, a local queue of
 *   500, job completion and failure batched with a delay of 0), from the
 *   commit that adds them all (`add_jobs`) to the last task finished;
 * - wakeup_p50 / p99: one `add_job` at a time committed while the same
 *   worker is idle, from the commit answered to its task starting.
 *
 * graphile-worker runs in this process under Deno, through npm (its `pg`
 * client, its LISTEN for new jobs).
 */
import {
  Logger,
  makeWorkerUtils,
  run,
  type Runner,
  type Task,
} from "graphile-worker";
import pg from "pg";
import { connect, type Sql } from "../../lib/db/connect.ts";
import { uuidv7 } from "../../lib/outbox/envelope.ts";
import type { Ctx } from "../context.ts";
import { closedLoop } from "../load.ts";
import { OrderSource } from "../orders.ts";
import { grantAddJob, placeWithAddJob } from "../order_variants.ts";
import { applyJob, createHandlerTables, Handled, KEYS } from "../peer_drain.ts";
import { Progress } from "../progress.ts";
import { type Figure, figure } from "../report.ts";
import { seeded, sleep, summarize } from "../stats.ts";

/** graphile-worker's recommended settings for throughput (its docs). */
const BATCHED = {
  concurrentJobs: 24,
  /** The size of the worker's pool (made here, see below). */
  maxPoolSize: 25,
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
};

/** graphile-worker's warnings and errors only. */
const quiet = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") {
    console.error(`graphile-worker ${level}: ${message}`);
  }
});

/** Figures of this scenario that later ones compare to, by name. */
function share(ctx: Ctx, name: string, value: number | null) {
  if (value !== null) ctx.shared.baselines.set(`peer.${name}`, value);
}

export async function peer(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const figures: Figure[] = [];
  const cpuUsPerOp: Record<string, Record<string, number>> = {};

  // order_add_job_8, on a database of its own as each write run has.
  {
    progress.step("peer: order with add_job, 8 clients");
    const db = await ctx.server.database("peer_orders");
    const sql = connect(db.url, { max: 8, applicationName: "bench" });
    let sweeping = true;
    let sweeper: Promise<void> | undefined;
    try {
      await installWorker(db.url);
      await grantAddJob(db.sql);
      sweeper = (async () => {
        while (sweeping) {
          await db.sql`delete from graphile_worker._private_jobs`;
          await sleep(100);
        }
      })();
      const sources = Array.from(
        { length: 8 },
        (_, i) => new OrderSource(sql, `peer-${i}`),
      );
      const r = await closedLoop({
        clients: 8,
        warmupMs: plan.warmupMs,
        durationMs: plan.writeMs,
        op: (c) => placeWithAddJob(sql, sources[c]),
        progress,
        cpu: ctx.cpuNow,
      });
      if (r.cpuUsPerOp) cpuUsPerOp.order_add_job_8 = r.cpuUsPerOp;
      progress.note(`order with add_job, 8 clients: ${Math.round(r.rate)}/s`);
      share(ctx, "order_add_job_8", r.rate);
      figures.push(figure("order_add_job_8", r.rate, "orders/s", {
        note:
          "the order statement with graphile_worker.add_job in place of the outbox row and its wake-up",
      }));
    } finally {
      sweeping = false;
      await sweeper;
      await sql.end({ timeout: 5 });
      await db.drop();
    }
  }

  // drain_handler and wakeup, one worker on a database of its own.
  const jobs = plan.peerJobs;
  const db = await ctx.server.database("peer_drain");
  // The worker's pool is ours to close: graphile-worker's stop() does not
  // wait for the pool it made to end, and dropping the database then ends
  // connections whose error nobody listens to any more (an uncaught error).
  const pool = new pg.Pool({
    connectionString: db.url,
    max: BATCHED.maxPoolSize,
  });
  // The handlers graphile-worker asks a pool of the caller's to have: a
  // connection's error is shown, except once the database is being dropped.
  let dropping = false;
  const onError = (error: Error) => {
    if (!dropping) console.error(`peer pool: ${error.message}`);
  };
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  let runner: Runner | undefined;
  try {
    await installWorker(db.url);
    await createHandlerTables(db.sql);

    const handled = new Handled(jobs);
    const started = new Map<number, (at: number) => void>();
    const receive: Task = async (payload, helpers) => {
      const { messageId, key } = payload as { messageId: string; key: number };
      await helpers.withPgClient((client) =>
        applyJob(client, { messageId, key })
      );
      handled.one();
    };
    const wake: Task = (payload) => {
      const at = performance.now();
      started.get((payload as { i: number }).i)?.(at);
    };
    runner = await run({
      pgPool: pool,
      logger: quiet,
      noHandleSignals: true,
      taskList: { receive, wake },
      preset: { worker: BATCHED },
    });

    progress.step(`peer: drain of ${jobs} handler jobs`);
    const t0 = performance.now();
    // One commit adds them all; the worker, idle until then, is woken by it.
    await db.sql`
      select count(*) from graphile_worker.add_jobs(array(
        select row('receive',
                   json_build_object('messageId', gen_random_uuid(),
                                     'key', g % ${KEYS}),
                   null, null, null, null, null, null
               )::graphile_worker.job_spec
          from generate_series(1, ${jobs}) g))`;
    const added = performance.now();
    await handled.all(progress, plan.drainTimeoutMs);
    const left = await untilNoJobs(db.sql, 10_000);
    const [{ inbox }] = await db.sql<{ inbox: number }[]>`
      select count(*)::int as inbox from bench.inbox`;
    if (inbox !== jobs || left !== 0) {
      throw new Error(
        `peer drain: ${inbox} inbox rows of ${jobs}, ${left} jobs left`,
      );
    }
    const seconds = (handled.lastAt - added) / 1000;
    const rate = jobs / seconds;
    progress.note(
      `drain: ${Math.round(rate)} jobs/s over ${
        seconds.toFixed(2)
      } s (adding took ${((added - t0) / 1000).toFixed(2)} s)`,
    );
    share(ctx, "drain_handler", rate);
    figures.push(figure("drain_handler", rate, "jobs/s", {
      note:
        "one worker, recommended batched settings; each job an inbox insert and an effect upsert in one transaction",
    }));

    progress.step(`peer: wake-up, ${plan.wakeup.samples} jobs one at a time`);
    const latencies = await wakeups(
      db.url,
      started,
      plan.wakeup.warmup,
      plan.wakeup.samples,
      progress,
    );
    const w = summarize(latencies);
    progress.note(
      `wake-up p50 ${w.p50?.toFixed(2)} ms, p99 ${w.p99?.toFixed(2)} ms`,
    );
    share(ctx, "wakeup_p50", w.p50);
    share(ctx, "wakeup_p99", w.p99);
    figures.push(
      figure("wakeup_p50", w.p50, "ms", {
        note: "add_job committed (answer received) while idle -> task started",
      }),
      figure("wakeup_p99", w.p99, "ms"),
    );
    ctx.params = {
      version: "graphile-worker 0.18.0 (npm), in the bench process, Deno",
      settings: BATCHED,
      orderAddJob:
        "bench/order_variants.ts placeWithAddJob: the order statement (key, capacity, order, line, event) with graphile_worker.add_job('order_placed', <OrderPlaced envelope>) in place of the outbox row and its wake-up; one round trip with its COMMIT as the orders role; jobs deleted every 100 ms, no worker running",
      drain:
        "jobs added by one add_jobs commit to an idle worker; timed from that commit answered to the last task finished; each task: BEGIN, inbox insert, effect upsert, COMMIT on the worker's pool (pg)",
      jobs,
      wakeupSamples: plan.wakeup.samples,
      cpuUsPerOp,
    };
  } finally {
    await runner?.stop().catch(() => {});
    await runner?.promise.catch(() => {});
    dropping = true;
    await pool.end();
    await db.drop();
  }
  return figures;
}

/** Installs graphile-worker's schema (its migrations) into the database. */
async function installWorker(url: string) {
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  try {
    await utils.migrate();
  } finally {
    await utils.release();
  }
}

/** Jobs left once none is left, or `timeoutMs` has passed. */
async function untilNoJobs(sql: Sql, timeoutMs: number): Promise<number> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker._private_jobs`;
    if (n === 0 || performance.now() > until) return n;
    await sleep(20);
  }
}

/**
 * Milliseconds from one `add_job` answered (autocommit) to its task
 * starting, `samples` times after `warmup` not counted, one at a time with
 * a random gap of 5 to 25 ms, as the wakeup scenario's orders.
 */
async function wakeups(
  url: string,
  started: Map<number, (at: number) => void>,
  warmup: number,
  samples: number,
  progress: Progress,
): Promise<number[]> {
  const sql = connect(url, { max: 1, applicationName: "bench" });
  const random = seeded(19);
  const out: number[] = [];
  try {
    for (let i = 0; i < warmup + samples; i++) {
      await sleep(5 + random() * 20);
      const arrived = new Promise<number>((r) => started.set(i, r));
      await sql`select graphile_worker.add_job('wake',
                  json_build_object('i', ${i}::int, 'id', ${uuidv7()}::text))`;
      const committed = performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const at = await Promise.race([
        arrived,
        new Promise<number>((r) => timer = setTimeout(() => r(NaN), 10_000)),
      ]);
      clearTimeout(timer);
      started.delete(i);
      if (Number.isNaN(at)) throw new Error(`wake-up job ${i} never started`);
      if (i >= warmup) out.push(at - committed);
      progress.update(Progress.count(i + 1, warmup + samples));
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  return out;
}
