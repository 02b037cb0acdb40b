/**
 * split: what each database does for one paid order with a database per
 * service (SERVICE_DATABASES=split, docs/scale.md). Paid orders are placed
 * and paid by 8 clients through the services, as the steady scenario does,
 * with the relays and consumers of split mode in this process; once every
 * receiver has applied them, each database's commits and written rows
 * (pg_stat_database) are divided by the paid orders. These are the
 * figures the capacity model multiplies.
 *
 * split_jetstream runs the same over JetStream, a stream per sender: it
 * adds each stream's messages per paid order and per second, and the CPU
 * of nats-server. Skipped, with the reason, when no JetStream answers
 * (NATS_URL).
 *
 * PostgreSQL's statistics reach pg_stat_database within about a second of
 * a transaction, or ten once its connection is idle: the counts are read
 * after a quiet pause. Commits include the workers' polls and reads in
 * that time, a few dozen against thousands of paid orders.
 */
import process from "node:process";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { dropDatabases } from "../../kit/postgres/open.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { parseConfig } from "../../config.ts";
import {
  databaseNames,
  openServiceDatabases,
  type ServiceDatabases,
} from "../../services/databases.ts";
import { SENDERS } from "../../services/routing.ts";
import {
  splitStream,
  startSplitMessaging,
  wakeRelaysAfterCommit,
} from "../../services/mod.ts";
import { type Ctx, SkipScenario } from "../context.ts";
import { natsCpuSeconds, natsMissing, natsUrl } from "../transports.ts";
import { OrderSource, pay, place } from "../orders.ts";
import { type Figure, figure } from "../report.ts";
import { sleep } from "../stats.ts";

interface Counts {
  commits: number;
  rows: number;
}

/** Each database's commits and written rows so far. */
async function counts(
  databases: ServiceDatabases,
): Promise<Map<string, Counts>> {
  const out = new Map<string, Counts>();
  for (const [name, sql] of databases.pools) {
    const [row] = await sql<{ commits: string; rows: string }[]>`
      select xact_commit as commits,
             tup_inserted + tup_updated + tup_deleted as rows
        from pg_stat_database where datname = current_database()`;
    out.set(name, { commits: Number(row.commits), rows: Number(row.rows) });
  }
  return out;
}

/**
 * CPU seconds so far of each database's server processes, by process id:
 * the backends connected to it, read from /proc (utime and stime, in
 * ticks of 1/100 s). The server runs on this machine in the benchmark.
 */
async function backendCpu(
  databases: ServiceDatabases,
): Promise<Map<string, Map<number, number>>> {
  const out = new Map<string, Map<number, number>>();
  for (const [name, sql] of databases.pools) {
    const pids = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = current_database()`;
    const cpu = new Map<number, number>();
    for (const { pid } of pids) {
      const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
      // Fields after the command name, which is in parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields.length > 13) {
        cpu.set(pid, (Number(fields[11]) + Number(fields[12])) / 100);
      }
    }
    out.set(name, cpu);
  }
  return out;
}

/** Each database's CPU seconds between two readings of {@link backendCpu}. */
function cpuBetween(
  before: Map<string, Map<number, number>>,
  after: Map<string, Map<number, number>>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, pids] of after) {
    let seconds = 0;
    for (const [pid, end] of pids) {
      seconds += end - (before.get(name)?.get(pid) ?? 0);
    }
    out.set(name, seconds);
  }
  return out;
}

/** True once nothing is owed or in flight in any sender's database. */
async function settled(databases: ServiceDatabases): Promise<boolean> {
  for (const sender of SENDERS) {
    const sql = databases.pools.get(sender)!;
    const [row] = await sql<{ n: number }[]>`
      select (select count(*) from ${sql(`${sender}.outbox`)})
           + (select count(*) from queue.deliveries
               where state <> 'done') as n`;
    if (Number(row.n) > 0) return false;
  }
  return true;
}

/** Runs `fn` with a JetStream manager of the bench's NATS. */
async function withJetstream<T>(
  fn: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<T>,
): Promise<T> {
  const nc = await natsConnect({ servers: natsUrl });
  try {
    return await fn(await jetstreamManager(nc));
  } finally {
    await nc.close();
  }
}

/** The last sequence of each sender's stream, by sender. */
function streamSequences(stream: string): Promise<Map<string, number>> {
  return withJetstream(async (jsm) => {
    const out = new Map<string, number>();
    for (const sender of SENDERS) {
      const info = await jsm.streams.info(splitStream(stream, sender));
      out.set(sender, info.state.last_seq);
    }
    return out;
  });
}

function dropStreams(stream: string): Promise<void> {
  return withJetstream(async (jsm) => {
    for (const sender of SENDERS) {
      await jsm.streams.delete(splitStream(stream, sender)).catch(() => false);
    }
  });
}

export function split(ctx: Ctx): Promise<Figure[]> {
  return splitOver(ctx, "postgres");
}

export async function splitJetstream(ctx: Ctx): Promise<Figure[]> {
  const missing = await natsMissing();
  if (missing) throw new SkipScenario(missing);
  return splitOver(ctx, "jetstream");
}

async function splitOver(
  ctx: Ctx,
  queue: "postgres" | "jetstream",
): Promise<Figure[]> {
  const { progress } = ctx;
  const name = queue === "postgres" ? "split" : "split_jetstream";
  const stream = `BENCH_${Deno.pid}_SPLIT`;
  const orders = ctx.plan.quick ? 40 : 2_000;
  const clients = 8;
  const base = await ctx.server.database(name);
  const { logger } = memoryLogger("error");
  const databases = await openServiceDatabases(base.url, logger);
  const figures: Figure[] = [];
  try {
    const config = parseConfig({
      SERVICE_DATABASES: "split",
      ...queue === "jetstream"
        ? { QUEUE: "jetstream", NATS_URL: natsUrl, NATS_STREAM: stream }
        : {},
    });
    const sql = databases.main;
    const messaging = await startSplitMessaging(
      { sql, log: logger, config },
      databases,
    );
    const wakers = wakeRelaysAfterCommit(sql, databases, messaging, logger);
    try {
      const run = async (n: number, label: string) => {
        let next = 0;
        const client = async (c: number) => {
          const source = new OrderSource(sql, `split-${label}-${c}`);
          while (next < n) {
            next++;
            await pay(sql, await place(sql, source));
          }
        };
        await Promise.all(
          Array.from({ length: clients }, (_, c) => client(c)),
        );
        const deadline = Date.now() + ctx.plan.drainTimeoutMs * 4;
        while (!await settled(databases)) {
          if (Date.now() > deadline) {
            throw new Error(`${name}: ${label} did not settle`);
          }
          await sleep(100);
        }
      };
      // Long enough for idle connections' statistics; the quick run's
      // figures are only checked for shape.
      const quiet = ctx.plan.quick ? 1_500 : 11_000;
      progress.step(`${name}: warm-up`);
      await run(clients * 2, "warm");
      await sleep(quiet);
      const before = await counts(databases);
      const cpuBefore = await backendCpu(databases);
      const appBefore = process.cpuUsage();
      const jetstream = queue === "jetstream";
      const seqBefore = jetstream ? await streamSequences(stream) : null;
      const natsBefore = natsCpuSeconds();
      progress.step(`${name}: ${orders} paid orders, ${clients} clients`);
      const started = performance.now();
      await run(orders, "run");
      const seconds = (performance.now() - started) / 1000;
      const app = process.cpuUsage(appBefore);
      const cpu = cpuBetween(cpuBefore, await backendCpu(databases));
      const natsSeconds = natsCpuSeconds() - natsBefore;
      const seqAfter = jetstream ? await streamSequences(stream) : null;
      await sleep(quiet);
      const after = await counts(databases);
      figures.push(
        figure("paid_per_s", orders / seconds, "paid orders/s", {
          note:
            "8 clients placing and paying, to every receiver applied, all 12 databases on one server",
        }),
      );
      const appMs = (app.user + app.system) / 1000 / orders;
      progress.note(`this process: ${appMs.toFixed(2)} ms CPU per paid order`);
      figures.push(
        figure("process_cpu_ms_per_paid", appMs, "ms", {
          note:
            "CPU of this process per paid order: the clients' commands, the relays, the consumers and the six receivers",
        }),
      );
      if (seqBefore && seqAfter) {
        figures.push(...streamFigures(seqBefore, seqAfter, orders, seconds));
        const natsMs = natsSeconds * 1000 / orders;
        progress.note(
          `nats-server: ${natsMs.toFixed(2)} ms CPU per paid order`,
        );
        figures.push(
          figure("nats_cpu_ms_per_paid", natsMs, "ms", {
            note: "CPU of nats-server per paid order, both streams together",
          }),
        );
      }
      for (const [name, end] of after) {
        const start = before.get(name)!;
        const commits = (end.commits - start.commits) / orders;
        const rows = (end.rows - start.rows) / orders;
        const cpuMs = (cpu.get(name) ?? 0) * 1000 / orders;
        progress.note(
          `${name}: ${commits.toFixed(2)} commits, ${rows.toFixed(2)} rows, ${
            cpuMs.toFixed(2)
          } ms CPU per paid order`,
        );
        figures.push(
          figure(`${name}_cpu_ms_per_paid`, cpuMs, "ms", {
            note:
              `CPU of the ${name} database's server processes per paid order`,
          }),
        );
        figures.push(
          figure(`${name}_commits_per_paid`, commits, "commits", {
            note: `commits in the ${name} database per paid order`,
          }),
          figure(`${name}_rows_per_paid`, rows, "rows", {
            note:
              `rows inserted, updated or deleted in the ${name} database per paid order`,
          }),
        );
      }
    } finally {
      await messaging.stop();
      await wakers.flush();
    }
  } finally {
    await databases.close();
    await dropDatabases(ctx.server.adminUrl, databaseNames(databases.urls));
    await base.drop();
    if (queue === "jetstream") await dropStreams(stream);
  }
  ctx.params = { orders, clients, databases: databases.urls.size, queue };
  return figures;
}

/** Each sender's stream: messages per paid order and per second. */
function streamFigures(
  before: Map<string, number>,
  after: Map<string, number>,
  orders: number,
  seconds: number,
): Figure[] {
  const figures: Figure[] = [];
  for (const [sender, end] of after) {
    const messages = end - before.get(sender)!;
    figures.push(
      figure(`${sender}_stream_msgs_per_paid`, messages / orders, "messages", {
        note:
          `messages stored in the ${sender} stream per paid order, one per delivery`,
      }),
      figure(`${sender}_stream_msgs_per_s`, messages / seconds, "messages/s", {
        note: `messages stored in the ${sender} stream per second of the run`,
      }),
    );
  }
  return figures;
}
