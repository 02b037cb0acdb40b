/**
 * console: the operator console's read models (services/console) with a
 * large history: 1,000,000 delivered messages over 100 sandboxes (queue
 * message, done delivery with its attempt, inbox row),
 * and in the sandbox the console reads, 10,000 pending outbox rows and
 * 1,000 dead letters. Each API is called 200 times in a row (one warm-up
 * call first): outbox ages, the dead-letter list, closure, the
 * deliveries page (counts per state, the newest deliveries), and the
 * search box (an order by its short number, a message by its id, a
 * customer's email, words of an error), with an order row behind every
 * message.
 */
import type { Sql } from "../../lib/db/connect.ts";
import type { Ctx } from "../context.ts";
import { Progress } from "../progress.ts";
import { atMost, type Figure, figure } from "../report.ts";
import { consoleWorld, splitConsoleWorld } from "../seed.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { dropDatabases } from "../../kit/postgres/open.ts";
import {
  databaseNames,
  openServiceDatabases,
} from "../../services/databases.ts";
import { summarize } from "../stats.ts";
import { outboxAges } from "../../services/console/outbox.ts";
import {
  deliveryCounts,
  listDeliveries,
} from "../../services/console/deliveries.ts";
import { closure } from "../../services/console/closure.ts";
import { search } from "../../services/console/search.ts";

const TARGET = atMost(50, "p95 <= 50 ms");

export async function consoleApis(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const c = plan.console;
  const db = await ctx.server.database("console");
  try {
    progress.step(`console: seeding ${c.history} delivered messages`);
    const t0 = performance.now();
    const { sandboxId } = await consoleWorld(db.sql, world(ctx));
    progress.note(
      `seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    return await measure(ctx, "console", db.sql, db.sql, sandboxId);
  } finally {
    await db.drop();
  }
}

/**
 * console_split: the same history and calls with a database per service
 * (SERVICE_DATABASES=split): the reads go to the orders database for the
 * queue and the outbox, and to each receiver's for the closure's inbox
 * lookups, and are joined in the app.
 */
export async function consoleSplitApis(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const base = await ctx.server.database("console_split");
  const { logger } = memoryLogger("error");
  const databases = await openServiceDatabases(base.url, logger);
  try {
    progress.step(
      `console_split: seeding ${plan.console.history} delivered messages`,
    );
    const t0 = performance.now();
    const { sandboxId } = await splitConsoleWorld(databases.pools, world(ctx));
    progress.note(
      `seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    return await measure(
      ctx,
      "console_split",
      databases.main,
      databases.pools.get("orders")!,
      sandboxId,
    );
  } finally {
    await databases.close();
    await dropDatabases(ctx.server.adminUrl, databaseNames(databases.urls));
    await base.drop();
  }
}

function world(ctx: Ctx) {
  const c = ctx.plan.console;
  return {
    history: c.history,
    pending: c.pending,
    dead: c.dead,
    sandboxCount: c.sandboxes,
    onStep: (what: string) => ctx.progress.update(what),
  };
}

/**
 * Calls each API `calls` times on `sql` (the app's pool) and reports its
 * p50 and p95; `queue` is where the probe's dead letter is read.
 */
async function measure(
  ctx: Ctx,
  label: string,
  sql: Sql,
  queue: Sql,
  sandboxId: string,
): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const c = plan.console;
  const figures: Figure[] = [];
  // What an operator of the read sandbox would type: the short number of
  // one of its orders, the id of one of its dead letters' messages, a
  // customer's address, and words of the dead letters' error.
  const [probe] = await queue<{ order_id: string; message_id: string }[]>`
    select aggregate_id as order_id, message_id from queue.deliveries
     where tenant_id = ${sandboxId} and state = 'dead' limit 1`;
  const shortNumber = probe.order_id.slice(-6).toUpperCase();
  const apis: [string, (sql: Sql) => Promise<unknown>][] = [
    ["outbox_ages", (sql) => outboxAges(sql, sandboxId)],
    [
      "dead_letters",
      (sql) => listDeliveries(sql, sandboxId, { state: "dead" }),
    ],
    ["closure", (sql) => closure(sql, sandboxId)],
    // The deliveries page: its tabs' counts, and its list (all states,
    // newest first), which reads history.
    ["delivery_counts", (sql) => deliveryCounts(sql, sandboxId)],
    ["deliveries", (sql) => listDeliveries(sql, sandboxId)],
    ["search_order", (sql) => search(sql, sandboxId, shortNumber)],
    ["search_message", (sql) => search(sql, sandboxId, probe.message_id)],
    ["search_email", (sql) => search(sql, sandboxId, "customer4200@")],
    ["search_error", (sql) => search(sql, sandboxId, "kitchen refuses")],
  ];
  const calls: Record<string, number> = {};
  for (const [name, call] of apis) {
    progress.step(`${label}: ${name}, ${c.calls} calls`);
    await call(sql);
    const times: number[] = [];
    const started = performance.now();
    for (let i = 0; i < c.calls; i++) {
      if (performance.now() - started > c.budgetMs) {
        ctx.notes.push(
          `${label} ${name}: stopped after ${i} calls, over the ${c.budgetMs} ms budget`,
        );
        break;
      }
      const t = performance.now();
      await call(sql);
      times.push(performance.now() - t);
      progress.update(Progress.count(i + 1, c.calls));
    }
    calls[name] = times.length;
    const s = summarize(times);
    progress.note(
      `${name}: p50 ${s.p50?.toFixed(1)} ms, p95 ${
        s.p95?.toFixed(1)
      } ms (${s.n} calls)`,
    );
    figures.push(
      figure(`${name}_p50`, s.p50, "ms"),
      figure(`${name}_p95`, s.p95, "ms", { target: TARGET }),
    );
  }
  ctx.params = {
    history: c.history,
    historySandboxes: c.sandboxes,
    pendingInReadSandbox: c.pending,
    deadInReadSandbox: c.dead,
    calls,
    apis:
      "outboxAges(sql, sandbox); listDeliveries(sql, sandbox, { state: 'dead' }); closure(sql, sandbox); deliveryCounts(sql, sandbox); listDeliveries(sql, sandbox); search(sql, sandbox, q) for a short number, a message id, an email prefix and error words",
    seeding:
      "INSERT ... SELECT generate_series, then VACUUM ANALYZE and CHECKPOINT",
  };
  return figures;
}
