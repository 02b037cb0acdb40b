/**
 * Applied deliveries per second over each transport, with one and with
 * three `deno task worker` processes on one database: a backlog of paid
 * orders is made through the services (each order placed, its payment
 * opened and its `payment_intent.succeeded` recorded by billing), held, and
 * then released to workers that are already running; the drain is timed on
 * the server clock from the release to the last delivery done, and the
 * relays' publishing from the release to the last outbox row published.
 * Each paid order makes three messages (OrderPlaced, the payment, OrderPaid)
 * and ten deliveries (OrderPlaced to three receivers, the payment to orders,
 * OrderPaid to six), and the chain is the whole one: relay, broker or
 * queue, consumers, the receivers' transactions, and orders' OrderPaid
 * relayed in its turn.
 *
 * The `transports` scenario of `deno task bench` runs {@link trial} (and is
 * skipped, with the reason, when no JetStream answers); this file also runs
 * by hand for more orders, runs and worker counts.
 *
 * Usage: deno run -A bench/transports.ts [--orders 1000] [--workers 1,3]
 *        [--queues postgres,jetstream] [--runs 2] [--out PATH]
 * Environment: BENCH_DATABASE_URL (default: an embedded cluster of its own,
 * durable settings), NATS_URL (default nats://127.0.0.1:4222), BENCH_PROFILE
 * (a folder: each worker's CPU profile over the drain, bench/profile.ts).
 */
import { parseArgs } from "node:util";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { OUTBOX_CHANNEL } from "../lib/outbox/channel.ts";
import type { Sql } from "../lib/db/connect.ts";
import { SENDERS } from "../services/routing.ts";
import { OrderSource, pay, place } from "./orders.ts";
import { type BenchDb, startServer } from "./server.ts";
import {
  cpuModel,
  cpuSeconds,
  machineBusySeconds,
  postgresCpuSeconds,
} from "./procfs.ts";
import { PROFILE_DIR, Profiler } from "./profile.ts";
import { settle } from "./seed.ts";
import { sleep } from "./stats.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Deliveries one paid order makes (3 + 1 + 6). */
const PER_ORDER = 10;

/** Clients that make the backlog side by side. */
const SEEDERS = 8;

export const natsUrl = Deno.env.get("NATS_URL") ?? "nats://127.0.0.1:4222";

/** Why JetStream cannot be measured here, or null when it can. */
export async function natsMissing(): Promise<string | null> {
  try {
    const nc = await natsConnect({ servers: natsUrl, timeout: 2000 });
    try {
      await (await jetstreamManager(nc)).getAccountInfo();
      return null;
    } finally {
      await nc.close();
    }
  } catch (error) {
    return `no JetStream at ${natsUrl}: ${(error as Error).message}`;
  }
}

/** The worker task's command line (deno.json), as `deno task` runs it. */
function workerCommand(): string[] {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`));
  const words = String(config.tasks.worker).split(/\s+/);
  if (words[0] !== "deno") throw new Error(`unexpected task: ${words}`);
  return words.slice(1);
}

/**
 * A worker process, ready once its messaging has started; its warnings and
 * errors are shown, the rest of its log is read and dropped.
 */
function startWorker(env: Record<string, string>, inspect?: string) {
  const [run, ...rest] = workerCommand();
  const child = new Deno.Command(Deno.execPath(), {
    args: [run, ...(inspect ? [inspect] : []), ...rest],
    cwd: ROOT,
    env: { LOG_LEVEL: "info", SANDBOX_WIPE: "off", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const ready = Promise.withResolvers<void>();
  (async () => {
    const lines = child.stdout.pipeThrough(new TextDecoderStream());
    let rest = "";
    for await (const chunk of lines) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      for (const line of parts) {
        if (line.includes('"messaging_started"')) ready.resolve();
        if (/"level":"(warn|error)"/.test(line)) console.error(line);
      }
    }
    ready.reject(new Error(`worker ${child.pid} exited before it started`));
  })();
  return { child, ready: ready.promise };
}

/** `orders` paid orders, left in the two outboxes and held there. */
async function backlog(sql: Sql, orders: number) {
  let next = 0;
  await Promise.all(
    Array.from({ length: SEEDERS }, async (_, i) => {
      const source = new OrderSource(sql, `seed${i}`);
      while (next < orders) {
        next++;
        await pay(sql, await place(sql, source));
      }
    }),
  );
  // Held until the workers are all up: not due for an hour.
  for (const service of SENDERS) {
    await sql`update ${sql(`${service}.outbox`)}
                 set next_attempt_at = now() + interval '1 hour'
               where state = 'pending'`;
  }
  await settle(sql, SENDERS.map((s) => `${s}.outbox`));
}

/** Makes the backlog due at once and wakes the relays; the server's time. */
async function release(sql: Sql): Promise<Date> {
  const [{ t0 }] = await sql.begin(async (tx) => {
    for (const service of SENDERS) {
      await tx`update ${tx(`${service}.outbox`)} set next_attempt_at = now()
                where state = 'pending'`;
    }
    for (const service of SENDERS) {
      await tx`select pg_notify(${OUTBOX_CHANNEL}, ${service})`;
    }
    return await tx<{ t0: Date }[]>`select clock_timestamp() as t0`;
  });
  return t0;
}

export interface Trial {
  queue: string;
  workers: number;
  run: number;
  orders: number;
  deliveries: number;
  seconds: number;
  appliedPerSecond: number;
  /** Messages published by the relays (three per paid order). */
  messages: number;
  /** From the release to the last outbox row published. */
  publishSeconds: number;
  publishedPerSecond: number;
  paidOrdersPerSecond: number;
  /**
   * Deliveries per CPU second of the workers, PostgreSQL and nats-server
   * together: what a delivery costs, which the neighbours' load disturbs
   * less than it disturbs the rate.
   */
  appliedPerCpuSecond: number | null;
  /**
   * CPU seconds during the drain: the workers, PostgreSQL (embedded only),
   * nats-server (every one on the machine), and the rest of the machine:
   * other people's work, which the 2 cores share with the drain.
   */
  cpu: Record<"workers" | "postgres" | "nats" | "others", number | null>;
  loadAverage: string;
}

/** CPU seconds of every process named `nats-server` on the machine. */
export function natsCpuSeconds(): number {
  let total = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const comm = Deno.readTextFileSync(`/proc/${entry.name}/comm`).trim();
      if (comm === "nats-server") total += cpuSeconds(Number(entry.name)) ?? 0;
    } catch {
      // Gone while we looked.
    }
  }
  return total;
}

/** The CPU counters of one moment, for a difference later. */
function cpuNow(pids: number[], postmaster: number | null) {
  return {
    workers: pids.reduce((s, pid) => s + (cpuSeconds(pid) ?? 0), 0),
    postgres: postmaster ? postgresCpuSeconds(postmaster) : null,
    nats: natsCpuSeconds(),
    self: cpuSeconds(Deno.pid) ?? 0,
    machine: machineBusySeconds(),
  };
}

function cpuSpent(
  a: ReturnType<typeof cpuNow>,
  b: ReturnType<typeof cpuNow>,
): Trial["cpu"] {
  const workers = b.workers - a.workers;
  const postgres = a.postgres !== null && b.postgres !== null
    ? b.postgres - a.postgres
    : null;
  const nats = b.nats - a.nats;
  const others = a.machine !== null && b.machine !== null && postgres !== null
    ? b.machine - a.machine - workers - postgres - nats - (b.self - a.self)
    : null;
  const r = (v: number | null) => v === null ? null : round(v, 1);
  return {
    workers: r(workers),
    postgres: r(postgres),
    nats: r(nats),
    others: r(others),
  };
}

export async function trial(
  db: BenchDb,
  o: { queue: string; workers: number; run: number; orders: number },
  postmaster: number | null,
): Promise<Trial> {
  const total = o.orders * PER_ORDER;
  await backlog(db.sql, o.orders);
  const stream = `BENCH_${Deno.pid}_${o.queue}_${o.workers}_${o.run}`;
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    QUEUE: o.queue,
    ...(o.queue === "jetstream"
      ? { NATS_URL: natsUrl, NATS_STREAM: stream }
      : {}),
  };
  const inspect = PROFILE_DIR
    ? await Promise.all(Array.from({ length: o.workers }, Profiler.flag))
    : [];
  const workers = Array.from(
    { length: o.workers },
    (_, i) => startWorker(env, inspect[i]?.flag),
  );
  try {
    await Promise.all(workers.map((w) => w.ready));
    const profilers = await Promise.all(
      inspect.map(async ({ port }) => {
        const profiler = await Profiler.connect(port);
        await profiler.start();
        return profiler;
      }),
    );
    await db.sql`checkpoint`.catch(() => {});
    const loadAverage = Deno.readTextFileSync("/proc/loadavg").split(" ")
      .slice(0, 3).join(" ");
    const pids = workers.map((w) => w.child.pid);
    const cpu0 = cpuNow(pids, postmaster);
    const t0 = await release(db.sql);
    const deadline = Date.now() + 600_000;
    for (;;) {
      const [row] = await db.sql<{ done: number }[]>`
        select count(*)::int as done from queue.deliveries
         where state = 'done'`;
      if (row.done >= total) break;
      if (Date.now() > deadline) {
        throw new Error(`only ${row.done} of ${total} done in 600 s`);
      }
      await sleep(250);
    }
    const cpu = cpuSpent(cpu0, cpuNow(pids, postmaster));
    for (const [i, profiler] of profilers.entries()) {
      await Deno.mkdir(PROFILE_DIR!, { recursive: true });
      const file = `${PROFILE_DIR}/${o.queue}-${o.workers}w-${
        pids[i]
      }.cpuprofile`;
      console.error(`${file}\n${await profiler.stop(file)}`);
    }
    const [{ end, n }] = await db.sql<{ end: Date; n: number }[]>`
      select max(done_at) as end, count(*)::int as n from queue.deliveries`;
    if (n !== total) throw new Error(`${n} deliveries, expected ${total}`);
    const seconds = (end.getTime() - t0.getTime()) / 1000;
    const published = await lastPublished(db.sql);
    const publishSeconds = (published.at.getTime() - t0.getTime()) / 1000;
    return {
      ...o,
      deliveries: total,
      seconds: round(seconds),
      appliedPerSecond: Math.round(total / seconds),
      messages: published.n,
      publishSeconds: round(publishSeconds),
      publishedPerSecond: Math.round(published.n / publishSeconds),
      paidOrdersPerSecond: round(o.orders / seconds, 1),
      appliedPerCpuSecond: cpu.postgres === null ? null : Math.round(
        total / (cpu.workers! + cpu.postgres + cpu.nats!),
      ),
      cpu,
      loadAverage,
    };
  } finally {
    for (const w of workers) {
      try {
        w.child.kill("SIGTERM");
      } catch {
        // Exited already.
      }
    }
    await Promise.all(workers.map((w) => w.child.status));
    if (o.queue === "jetstream") await dropStream(stream);
  }
}

/** The senders' messages published, and when the last one was. */
async function lastPublished(sql: Sql): Promise<{ n: number; at: Date }> {
  const [row] = await sql<{ n: number; at: Date | null }[]>`
    select count(*)::int as n, max(published_at) as at from queue.messages
     where source = any(${[...SENDERS]}::text[])`;
  return { n: row.n, at: row.at ?? new Date(0) };
}

async function dropStream(name: string) {
  const nc = await natsConnect({ servers: natsUrl });
  try {
    await (await jetstreamManager(nc)).streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}

function round(value: number, digits = 2): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

if (import.meta.main) await byHand();

async function byHand() {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: {
      orders: { type: "string", default: "1000" },
      workers: { type: "string", default: "1,3" },
      queues: { type: "string", default: "postgres,jetstream" },
      runs: { type: "string", default: "2" },
      out: { type: "string" },
    },
  });
  const server = await startServer({ stats: false });
  const trials: Trial[] = [];
  try {
    const orders = Number(args.orders);
    for (let run = 1; run <= Number(args.runs); run++) {
      for (const queue of args.queues.split(",")) {
        for (const workers of args.workers.split(",").map(Number)) {
          const db = await server.database(`${queue}_${workers}`);
          try {
            const t = await trial(
              db,
              { queue, workers, run, orders },
              server.postmasterPid,
            );
            trials.push(t);
            console.log(JSON.stringify(t));
          } finally {
            await db.drop();
          }
        }
      }
    }
  } finally {
    await server.stop();
  }
  console.log(
    `\n${cpuModel() ?? "unknown CPU"}, ${navigator.hardwareConcurrency} cores`,
  );
  console.table(trials.map((t) => ({
    queue: t.queue,
    workers: t.workers,
    run: t.run,
    seconds: t.seconds,
    "applied/s": t.appliedPerSecond,
    "published/s": t.publishedPerSecond,
    "paid orders/s": t.paidOrdersPerSecond,
    "applied/CPU s": t.appliedPerCpuSecond,
    "CPU s: workers/pg/nats/others":
      `${t.cpu.workers}/${t.cpu.postgres}/${t.cpu.nats}/${t.cpu.others}`,
    load: t.loadAverage,
  })));
  if (args.out) {
    await Deno.writeTextFile(args.out, JSON.stringify(trials, null, 2) + "\n");
  }
}
