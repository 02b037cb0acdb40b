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
 *
 * And two for reading the misses, with no target of their own:
 * - six_rows_plain: the six rows an order writes, in one statement into plain
 *   tables, 8 clients (what the rows cost without the services' machinery);
 * - jobs_plain: a job queue draining no-op jobs, 1,000 per statement, one
 *   client (the kind of figure the relay target cites).
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
  // six_rows_plain: the rows an order writes, in plain tables.
  await sql`create table bench.keys (
    tenant_id int not null, key text not null, request_hash text not null,
    order_id uuid not null, primary key (tenant_id, key))`;
  await sql`create table bench.day_counts (
    tenant_id int not null, day int not null, sku text not null,
    qty int not null, primary key (tenant_id, day, sku))`;
  await sql`create table bench.placed (
    id uuid primary key, tenant_id int not null, customer_name text not null,
    customer_email text not null, total_cents int not null,
    created_at timestamptz not null default now())`;
  await sql`create table bench.lines (
    order_id uuid not null, sku text not null, qty int not null,
    unit_cents int not null, primary key (order_id, sku))`;
  await sql`create table bench.events (
    id bigint generated always as identity primary key, order_id uuid not null,
    type text not null, message_id uuid)`;
  // jobs_plain: a job queue's table, its available jobs indexed apart.
  await sql`create table bench.jobs (
    id bigint generated always as identity primary key, kind text not null,
    args jsonb not null, state text not null default 'available',
    attempts int not null default 0, run_at timestamptz not null default now(),
    finished_at timestamptz)`;
  await sql`create index jobs_available on bench.jobs (id)
    where state = 'available'`;
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
  /** CPU µs per transaction by baseline: the bench process and PostgreSQL. */
  const cpuUsPerOp: Record<string, Record<string, number>> = {};
  const random = seeded(1);
  const record = (name: string, value: number, unit: string) => {
    ctx.shared.baselines.set(name, value);
    figures.push(figure(name, value, unit));
    progress.note(`${name}: ${Math.round(value * 10) / 10} ${unit}`);
  };
  try {
    await createTables(db.sql);
    const loop = async (
      name: string,
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
          cpu: ctx.cpuNow,
        });
        if (r.cpuUsPerOp) cpuUsPerOp[name] = r.cpuUsPerOp;
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
        await loop(
          `commit_${clients}`,
          `commit, ${clients} client(s)`,
          clients,
          commit,
        ),
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
        await loop(
          `outbox_plain_${clients}`,
          `outbox_plain, ${clients} clients`,
          clients,
          outbox,
        ),
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
      await loop("handler_plain_4", "handler_plain, 4 clients", 4, handler),
      "tx/s",
    );

    // The rows of an order (services/orders/orders_sql.ts
    // newOrderStatement) in one statement, with none of the services'
    // machinery: no role or sandbox, no row-level security, no foreign
    // keys, no wake-up.
    let placed = 0;
    const sixRows = (sql: Sql) =>
      sql.begin(async (tx) => {
        const n = ++placed;
        const [sandbox, day, key] = [n % 8, n % 60, `k${n}`];
        const orderId = uuidv7();
        const e = envelope(n);
        await tx`
          with k as (
            insert into bench.keys values (${sandbox}, ${key}, 'h', ${orderId})
          ), c as (
            insert into bench.day_counts as d values (${sandbox}, ${day}, 'bun', 1)
            on conflict (tenant_id, day, sku) do update set qty = d.qty + 1
          ), o as (
            insert into bench.placed (id, tenant_id, customer_name,
                                      customer_email, total_cents)
            values (${orderId}, ${sandbox}, 'Bench Customer',
                    'bench@example.com', 350)
          ), l as (
            insert into bench.lines values (${orderId}, 'bun', 1, 350)
          ), v as (
            insert into bench.events (order_id, type, message_id)
            values (${orderId}, 'OrderPlaced', ${e.messageId})
          )
          insert into bench.outbox (message_id, type, envelope)
          values (${e.messageId}, ${e.type}, ${tx.json(e)})`;
      });
    record(
      "six_rows_plain_8",
      await loop("six_rows_plain_8", "six_rows_plain, 8 clients", 8, sixRows),
      "tx/s",
    );

    progress.step(`baseline jobs_plain: ${plan.relayRows} no-op jobs`);
    record("jobs_plain", await jobsDrain(db.sql, plan.relayRows), "jobs/s");

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
      sixRowsPlain:
        "six_rows_plain_8: the six rows of an order (key, capacity upsert, order, line, event, outbox row) in one statement into plain tables: no role, no row-level security, no foreign keys, no wake-up",
      jobsPlain:
        "jobs_plain: one client drains no-op jobs from a job table, 1,000 marked completed per statement (FOR UPDATE SKIP LOCKED), the kind of job queue the relay target cites",
      notify:
        "from sending the autocommit `select pg_notify(...)` to the LISTEN callback",
      cpuUsPerOp,
    };
  } finally {
    await db.drop();
  }
  return figures;
}

/**
 * A PostgreSQL job queue draining `n` no-op jobs: one client marks 1,000
 * available jobs completed per statement (oldest first, FOR UPDATE SKIP
 * LOCKED) and gets them back, until none is left. Jobs per second.
 */
async function jobsDrain(sql: Sql, n: number): Promise<number> {
  await sql`insert into bench.jobs (kind, args)
            select 'noop', jsonb_build_object('n', g)
              from generate_series(1, ${n}) g`;
  await sql`vacuum analyze bench.jobs`;
  await sql`checkpoint`;
  const started = performance.now();
  let done = 0;
  for (;;) {
    const rows = await sql`
      update bench.jobs j
         set state = 'completed', finished_at = now(), attempts = attempts + 1
       where j.id in (select id from bench.jobs
                       where state = 'available' and run_at <= now()
                       order by id limit 1000 for update skip locked)
      returning j.id, j.args`;
    if (rows.length === 0) break;
    done += rows.length;
  }
  return done / ((performance.now() - started) / 1000);
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
