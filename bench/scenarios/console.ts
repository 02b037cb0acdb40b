/**
 * console: the operator console's read models (services/console) with a
 * large history: 1,000,000 delivered messages over 100 sandboxes (outbox
 * row published, queue message, done delivery with its attempt, inbox row),
 * and in the sandbox the console reads, 10,000 pending outbox rows and
 * 1,000 dead letters. Each API is called 200 times in a row (one warm-up
 * call first): outbox ages, the dead-letter list, closure, and the
 * deliveries page (counts per state, the newest deliveries).
 */
import type { Sql } from "../../lib/db/connect.ts";
import type { Ctx } from "../context.ts";
import { Progress } from "../progress.ts";
import { atMost, type Figure, figure } from "../report.ts";
import { consoleWorld } from "../seed.ts";
import { summarize } from "../stats.ts";
import { outboxAges } from "../../services/console/outbox.ts";
import {
  deliveryCounts,
  listDeliveries,
} from "../../services/console/deliveries.ts";
import { closure } from "../../services/console/closure.ts";

const TARGET = atMost(50, "p95 <= 50 ms");

export async function consoleApis(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const c = plan.console;
  const db = await ctx.server.database("console");
  const figures: Figure[] = [];
  try {
    progress.step(`console: seeding ${c.history} delivered messages`);
    const t0 = performance.now();
    const { sandboxId } = await consoleWorld(db.sql, {
      history: c.history,
      pending: c.pending,
      dead: c.dead,
      sandboxCount: c.sandboxes,
      onStep: (what) => progress.update(what),
    });
    progress.note(
      `seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
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
    ];
    const calls: Record<string, number> = {};
    for (const [name, call] of apis) {
      progress.step(`console: ${name}, ${c.calls} calls`);
      await call(db.sql);
      const times: number[] = [];
      const started = performance.now();
      for (let i = 0; i < c.calls; i++) {
        if (performance.now() - started > c.budgetMs) {
          ctx.notes.push(
            `${name}: stopped after ${i} calls, over the ${c.budgetMs} ms budget`,
          );
          break;
        }
        const t = performance.now();
        await call(db.sql);
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
        "outboxAges(sql, sandbox); listDeliveries(sql, sandbox, { state: 'dead' }); closure(sql, sandbox); deliveryCounts(sql, sandbox); listDeliveries(sql, sandbox)",
      seeding:
        "INSERT ... SELECT generate_series, then VACUUM ANALYZE and CHECKPOINT",
    };
  } finally {
    await db.drop();
  }
  return figures;
}
