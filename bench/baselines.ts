/**
 * Baselines, measured in the same run with the same client library
 * (postgres.js) on the same server, so every target is a ratio:
 *
 * - commit: single-row INSERT commits per second (autocommit), 1 and 4 clients;
 * - outbox_plain: per transaction, an UPDATE of an order row plus one INSERT
 *   of an envelope-sized row, 4 and 8 clients, no wake-up of any kind;
 * - handler_plain: per transaction, an INSERT into an inbox table plus one
 *   upsert of an effect row, 4 clients;
 * - notify: a committed pg_notify to a LISTEN callback on another connection.
 */
import { connect, type Sql } from "../lib/db/connect.ts";
import { uuidv7 } from "../lib/outbox/envelope.ts";
import type { Ctx } from "./context.ts";
import { closedLoop } from "./load.ts";
import { Progress } from "./progress.ts";
import { type Figure, figure } from "./report.ts";
import { seeded, sleep, summarize } from "./stats.ts";

const ORDERS = 10_000;

async function createTables(sql: Sql) {
  await sql`create schema bench`;
  await sql`create table bench.commits (
    id bigint generated always as identity primary key,
    v int not null, at timestamptz not null default now())`;
  await sql`create table bench.orders (
    id int primary key, state text not null, version int not null,
    updated_at timestamptz not null)`;
  await sql`insert into bench.orders
    select g, 'placed', 1, now() from generate_series(1, ${ORDERS}) g`;
  await sql`create table bench.outbox (
    id bigint generated always as identity primary key,
    message_id uuid not null unique, type text not null,
    envelope jsonb not null, created_at timestamptz not null default now())`;
  await sql`create table bench.inbox (
    message_id uuid primary key, received_at timestamptz not null default now())`;
  await sql`create table bench.effects (
    key int primary key, n int not null, updated_at timestamptz not null)`;
  await sql`vacuum analyze bench.orders`;
}

/** About the size of an OrderPlaced envelope (one line). */
function envelope(orderId: number) {
  return {
    messageId: uuidv7(),
    type: "OrderPlaced",
    schemaVersion: 1,
    aggregateId: String(orderId),
    aggregateVersion: 2,
    occurredAt: new Date().toISOString(),
    payload: {
      lines: [{ sku: "cardamom-bun", name: "Cardamom bun", qty: 1 }],
      totalCents: 350,
      customer: { name: "Bench Customer", email: "bench@example.com" },
      fulfilment: "delivery",
    },
  };
}

export async function baselines(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const db = await ctx.server.database("baselines");
  const figures: Figure[] = [];
  const random = seeded(1);
  const record = (name: string, value: number, unit: string) => {
    ctx.shared.baselines.set(name, value);
    figures.push(figure(name, value, unit));
    progress.note(`${name}: ${Math.round(value * 10) / 10} ${unit}`);
  };
  try {
    await createTables(db.sql);
    const loop = async (
      label: string,
      clients: number,
      op: (sql: Sql) => Promise<unknown>,
    ) => {
      progress.step(`baseline ${label}`);
      const sql = connect(db.url, { max: clients, applicationName: "bench" });
      try {
        const r = await closedLoop({
          clients,
          warmupMs: plan.warmupMs,
          durationMs: plan.loopMs,
          op: async () => {
            await op(sql);
          },
          progress,
        });
        return r.rate;
      } finally {
        await sql.end({ timeout: 5 });
      }
    };
    const commit = (sql: Sql) =>
      sql`insert into bench.commits (v) values (${Math.floor(random() * 1e6)})`;
    for (const clients of [1, 4]) {
      record(
        `commit_${clients}`,
        await loop(`commit, ${clients} client(s)`, clients, commit),
        "commits/s",
      );
    }
    const outbox = (sql: Sql) =>
      sql.begin(async (tx) => {
        const id = 1 + Math.floor(random() * ORDERS);
        await tx`update bench.orders set state = 'paid', version = version + 1,
                 updated_at = now() where id = ${id}`;
        const e = envelope(id);
        await tx`insert into bench.outbox (message_id, type, envelope)
                 values (${e.messageId}, ${e.type}, ${tx.json(e)})`;
      });
    for (const clients of [4, 8]) {
      record(
        `outbox_plain_${clients}`,
        await loop(`outbox_plain, ${clients} clients`, clients, outbox),
        "tx/s",
      );
    }
    const handler = (sql: Sql) =>
      sql.begin(async (tx) => {
        await tx`insert into bench.inbox (message_id) values (${uuidv7()})`;
        await tx`insert into bench.effects (key, n, updated_at)
                 values (${Math.floor(random() * ORDERS)}, 1, now())
                 on conflict (key) do update set n = bench.effects.n + 1,
                   updated_at = now()`;
      });
    record(
      "handler_plain_4",
      await loop("handler_plain, 4 clients", 4, handler),
      "tx/s",
    );

    progress.step("baseline notify");
    const latency = await notifyLatency(db.url, plan.notifySamples, progress);
    const s = summarize(latency);
    ctx.shared.baselines.set("notify_p50", s.p50!);
    ctx.shared.baselines.set("notify_p99", s.p99!);
    figures.push(figure("notify_p50", s.p50, "ms"));
    figures.push(figure("notify_p99", s.p99, "ms"));
    progress.note(
      `notify p50 ${s.p50?.toFixed(3)} ms, p99 ${s.p99?.toFixed(3)} ms`,
    );
    ctx.params = {
      loopMs: plan.loopMs,
      warmupMs: plan.warmupMs,
      orderRows: ORDERS,
      notifySamples: plan.notifySamples,
      transactions: "postgres.js sql.begin: BEGIN, the statements, COMMIT",
      notify:
        "from sending the autocommit `select pg_notify(...)` to the LISTEN callback",
    };
  } finally {
    await db.drop();
  }
  return figures;
}

/** Milliseconds from sending a committed pg_notify to the listener's callback. */
async function notifyLatency(
  url: string,
  samples: number,
  progress: Progress,
): Promise<number[]> {
  const listener = connect(url, { max: 1, applicationName: "bench-listen" });
  const sender = connect(url, { max: 1, applicationName: "bench" });
  const waiting = new Map<string, (t: number) => void>();
  const out: number[] = [];
  try {
    await listener.listen("bench_notify", (payload) => {
      waiting.get(payload)?.(performance.now());
    });
    await sender`select 1`;
    for (let i = 0; i < samples; i++) {
      const key = String(i);
      const arrived = new Promise<number>((resolve) =>
        waiting.set(key, resolve)
      );
      const t0 = performance.now();
      await sender`select pg_notify('bench_notify', ${key})`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const t1 = await Promise.race([
        arrived,
        new Promise<number>((r) => {
          timer = setTimeout(() => r(NaN), 5_000);
        }),
      ]);
      clearTimeout(timer);
      waiting.delete(key);
      if (Number.isNaN(t1)) throw new Error(`notification ${i} never arrived`);
      out.push(t1 - t0);
      progress.update(Progress.count(i + 1, samples));
      await sleep(2);
    }
  } finally {
    await listener.end({ timeout: 5 });
    await sender.end({ timeout: 5 });
  }
  return out;
}
