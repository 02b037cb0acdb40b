/**
 * Baselines, measured in the same run with the same client library
 * (postgres.js) on the same server, so every target is a ratio:
 *
 * - commit: single-row INSERT commits per second (autocommit), 1 and 4 clients;
 * - outbox_plain: per transaction, an UPDATE of an order row plus one INSERT
 *   of an envelope-sized row, 4 and 8 clients, no wake-up of any kind;
 * - handler_plain: per transaction, an INSERT into an inbox table plus one
 *   upsert of an effect row, 4 clients;
 * - notify: a committed pg_notify to a LISTEN callback on another connection;
 * - paid_order_plain: what a paid order must write with no queue at all, in
 *   paid orders per second, 8 clients (see {@link paidOrder}): steady's
 *   sustainable rate is read against it (issue 55).
 *
 * And two for reading the misses, with no target of their own:
 * - six_rows_plain: the six rows an order writes, in one statement into plain
 *   tables, 8 clients (what the rows cost without the services' machinery);
 * - jobs_plain: a job queue draining no-op jobs, 1,000 per statement, one
 *   client (the kind of figure the relay target cites).
 */
import { connect, type Sql, type TxSql } from "../lib/db/connect.ts";
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

/**
 * paid_order_plain's tables: each a copy of a bakery table (`like ...
 * including all`: its columns, defaults, generated columns, checks,
 * primary key, unique constraints and indexes), in schema `paid`, without
 * what a copy leaves out: row-level security, foreign keys, triggers.
 */
const PAID_TABLES = [
  ["orders", "orders.orders"],
  ["lines", "orders.lines"],
  ["day_counts", "orders.day_counts"],
  ["events", "orders.events"],
  ["commands_seen", "orders.commands_seen"],
  ["payments", "billing.payments"],
  ["stripe_events", "billing.stripe_events"],
  ["kitchen_inbox", "kitchen.inbox"],
  ["kitchen_cards", "kitchen.cards"],
  ["schedule_inbox", "schedule.inbox"],
  ["schedule_bookings", "schedule.bookings"],
  ["dispatch_inbox", "dispatch.inbox"],
  ["dispatch_stops", "dispatch.stops"],
  ["crm_inbox", "crm.inbox"],
  ["crm_interactions", "crm.interactions"],
  ["customers_inbox", "customers.inbox"],
  ["customers_history", "customers.history"],
  ["receipts_inbox", "receipts.inbox"],
  ["receipts_receipts", "receipts.receipts"],
] as const;

async function createPaidTables(sql: Sql) {
  await sql`create schema paid`;
  for (const [name, like] of PAID_TABLES) {
    await sql`create table ${sql(`paid.${name}`)}
                (like ${sql(like)} including all)`;
  }
}

/** The rows a paid order writes: 6 + 2 + 2 + 6 x 2. */
const PAID_ORDER_ROWS = 22;

/**
 * One paid order's writes with no queue at all: plain SQL into the `paid`
 * tables, nine transactions one after another, as the bakery commits them:
 *
 * 1. the order: its idempotency key, the day's count, the order, its line,
 *    its event, and the payment opened pending (6 rows);
 * 2. the Stripe event's id and the payment settled (2);
 * 3. the order marked paid, and its event (2);
 * 4. to 9. at each of the six receivers, the inbox row of OrderPaid (keyed
 *    by its message id) and the receiver's effect (2 each).
 *
 * Each transaction is postgres.js `sql.begin`: BEGIN, its statements sent
 * without waiting for one another, COMMIT (durable, as every baseline's).
 */
async function paidOrder(sql: Sql, tenant: string, day: string) {
  const orderId = uuidv7();
  const paidMessage = uuidv7();
  const paymentId = `pay_${orderId}`;
  const lines = [{ sku: "cardamom-bun", name: "Cardamom bun", qty: 1 }];
  const customer = { name: "Bench Customer", email: "bench@example.com" };
  const total = 350;
  await sql.begin((tx) => [
    tx`insert into paid.commands_seen
         (tenant_id, idempotency_key, request_hash, order_id)
       values (${tenant}, ${`k-${orderId}`}, 'h', ${orderId})`,
    tx`insert into paid.day_counts as d (tenant_id, day, sku, qty)
       values (${tenant}, ${day}, 'cardamom-bun', 1)
       on conflict (tenant_id, day, sku) do update set qty = d.qty + 1`,
    tx`insert into paid.orders (id, tenant_id, customer_name, customer_email,
                                fulfilment, day, total_cents)
       values (${orderId}, ${tenant}, ${customer.name}, ${customer.email},
               'delivery', ${day}, ${total})`,
    tx`insert into paid.lines (order_id, sku, tenant_id, name, qty, unit_cents)
       values (${orderId}, 'cardamom-bun', ${tenant}, 'Cardamom bun', 1,
               ${total})`,
    tx`insert into paid.events (tenant_id, order_id, type, version, message_id)
       values (${tenant}, ${orderId}, 'OrderPlaced', 1, ${uuidv7()})`,
    tx`insert into paid.payments (id, tenant_id, order_id, amount_cents)
       values (${paymentId}, ${tenant}, ${orderId}, ${total})`,
  ]);
  await sql.begin((tx) => [
    tx`insert into paid.stripe_events (event_id, tenant_id, type, payment_id,
                                       order_id, outcome)
       values (${`evt_${uuidv7()}`}, ${tenant}, 'checkout.session.completed',
               ${paymentId}, ${orderId}, 'paid')`,
    tx`update paid.payments set state = 'succeeded', card_last4 = '4242',
              charged_cents = ${total}, charged_currency = 'eur',
              updated_at = now()
        where id = ${paymentId}`,
  ]);
  await sql.begin((tx) => [
    tx`update paid.orders set state = 'paid', version = 2,
              payment_ref = ${paymentId}, updated_at = now()
        where id = ${orderId}`,
    tx`insert into paid.events (tenant_id, order_id, type, version, message_id)
       values (${tenant}, ${orderId}, 'OrderPaid', 2, ${paidMessage})`,
  ]);
  const linesJson = sql.json(lines);
  const effects = [
    [
      "kitchen_inbox",
      (tx: TxSql) =>
        tx`insert into paid.kitchen_cards as c (order_id, tenant_id, state,
                                              version, items, day)
         values (${orderId}, ${tenant}, 'confirmed', 2, ${linesJson}, ${day})
         on conflict (order_id) do update set state = 'confirmed',
                version = excluded.version, updated_at = now()
          where c.version < excluded.version`,
    ],
    [
      "schedule_inbox",
      (tx: TxSql) =>
        tx`insert into paid.schedule_bookings as b (order_id, sku, tenant_id,
                                                  day, qty, state, version)
         values (${orderId}, 'cardamom-bun', ${tenant}, ${day}, 1, 'reserved',
                 2)
         on conflict (order_id, sku) do update set state = excluded.state,
                version = excluded.version
          where b.version < excluded.version`,
    ],
    [
      "dispatch_inbox",
      (tx: TxSql) =>
        tx`insert into paid.dispatch_stops as s (order_id, tenant_id, state,
                                               version, customer_name, day)
         values (${orderId}, ${tenant}, 'confirmed', 2, ${customer.name},
                 ${day})
         on conflict (order_id) do update set state = 'confirmed',
                version = excluded.version, updated_at = now()
          where s.version < excluded.version`,
    ],
    [
      "crm_inbox",
      (tx: TxSql) =>
        tx`insert into paid.crm_interactions (tenant_id, message_id, email,
                                            order_id, kind, note)
         values (${tenant}, ${paidMessage}, ${customer.email}, ${orderId},
                 'payment', ${`paid 3.50 for 1 item(s), delivery on ${day}`})`,
    ],
    [
      "customers_inbox",
      (tx: TxSql) =>
        tx`insert into paid.customers_history (tenant_id, message_id, email,
                                             name, order_id, event,
                                             total_cents)
         values (${tenant}, ${paidMessage}, ${customer.email}, ${customer.name},
                 ${orderId}, 'OrderPaid', ${total})`,
    ],
    [
      "receipts_inbox",
      (tx: TxSql) =>
        tx`insert into paid.receipts_receipts (order_id, tenant_id, number,
                                             lines, total_cents, payment_ref,
                                             message_id)
         values (${orderId}, ${tenant},
                 ${`R-${orderId.slice(-6).toUpperCase()}`}, ${linesJson},
                 ${total}, ${paymentId}, ${paidMessage})
         on conflict (order_id) do nothing`,
    ],
  ] as const;
  for (const [inbox, effect] of effects) {
    await sql.begin((tx) => [
      tx`insert into ${tx(`paid.${inbox}`)} (message_id, tenant_id, type,
                                            status, outcome, aggregate_id,
                                            aggregate_version)
         values (${paidMessage}, ${tenant}, 'OrderPaid', 200,
                 ${tx.json({ applied: true })}, ${orderId}, 2)`,
      effect(tx),
    ]);
  }
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
      op: (sql: Sql, client: number) => Promise<unknown>,
    ) => {
      progress.step(`baseline ${label}`);
      const sql = connect(db.url, { max: clients, applicationName: "bench" });
      try {
        const r = await closedLoop({
          clients,
          warmupMs: plan.warmupMs,
          durationMs: plan.loopMs,
          op: async (client) => {
            await op(sql, client);
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

    // What a paid order must write, with no queue at all: one tenant per
    // client, as the write scenario's orders.
    await createPaidTables(db.sql);
    const today = new Date().toISOString().slice(0, 10);
    const tenants = Array.from({ length: 8 }, () => crypto.randomUUID());
    const paid = await loop(
      "paid_order_plain_8",
      "paid_order_plain, 8 clients",
      8,
      (sql, client) => paidOrder(sql, tenants[client], today),
    );
    record("paid_order_plain_8", paid, "paid orders/s");
    // Its CPU a paid order, for steady's CPU a paid order at its rate.
    const paidCpu = cpuUsPerOp.paid_order_plain_8 ?? {};
    for (
      const [proc, name] of [["bench", "process"], ["postgres", "postgres"]]
    ) {
      const us = paidCpu[proc];
      if (us === undefined) continue;
      const key = `paid_order_plain_8_cpu_${name}`;
      ctx.shared.baselines.set(key, us / 1000);
      figures.push(figure(key, us / 1000, "ms/paid order", {
        note: name === "process"
          ? "CPU of the bench process a paid order: postgres.js sending the nine transactions"
          : "CPU of PostgreSQL a paid order: the nine transactions",
      }));
    }

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
      paidOrderPlain:
        `paid_order_plain_8: one paid order's ${PAID_ORDER_ROWS} rows in nine transactions one after another (the order with its line and pending payment; the Stripe event and the settled payment; the order marked paid; at six receivers an inbox row and its effect), plain SQL into copies of the bakery's tables (like ... including all: no row-level security, foreign keys or triggers), no role, no queue; 8 clients, one tenant each`,
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
