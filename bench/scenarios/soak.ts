/**
 * soak (only with --soak): paid orders at 80 % of the sustainable rate for
 * 30 minutes through the bakery in this process. Throughput is the number of
 * paid orders applied at all six receivers per second; drift compares the
 * first and the last five minutes (a third of the run each when it is
 * shorter than 15 minutes). pg_notification_queue_usage() is sampled every
 * five seconds.
 */
import { connect } from "../../lib/db/connect.ts";
import type { Ctx } from "../context.ts";
import { openLoop } from "../load.ts";
import { OrderSource, pay, place } from "../orders.ts";
import { startProbe } from "../probe.ts";
import { atMost, type Figure, figure } from "../report.ts";
import { sleep, summarize } from "../stats.ts";

export async function soak(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const rate = (ctx.shared.sustainableRate ?? 40) * 0.8;
  const durationMs = plan.soakMs;
  const windowMs = Math.min(5 * 60_000, durationMs / 3);
  const db = await ctx.server.database("soak");
  const sql = connect(db.url, { applicationName: "bench-app" });
  const applied: { at: number; latency: number }[] = [];
  let usageMax = 0;
  let t0 = 0;
  try {
    const probe = await startProbe({ url: db.url, sql });
    const sources = Array.from(
      { length: 8 },
      (_, i) => new OrderSource(sql, `soak-${i}`),
    );
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [row] = await db.sql<{ u: number }[]>`
          select pg_notification_queue_usage()::float8 as u`;
        usageMax = Math.max(usageMax, row.u);
        await sleep(5_000);
      }
    })();
    try {
      progress.step(
        `soak: ${rate.toFixed(1)} paid orders/s for ${durationMs / 60_000} min`,
      );
      t0 = performance.now();
      const r = await openLoop({
        rate,
        durationMs,
        maxInFlight: 2_000,
        settleMs: plan.steady.payDelayMs + 30_000,
        op: async (i) => {
          const order = await place(sql, sources[i % sources.length]);
          await sleep(plan.steady.payDelayMs);
          let committed = 0;
          probe.watch("OrderPaid", order.orderId, (c) => {
            probe.unwatch("OrderPaid", order.orderId);
            applied.push({ at: c.doneAt - t0, latency: c.doneAt - committed });
          });
          await pay(sql, order);
          committed = performance.now();
        },
        onTick: (ms) =>
          progress.update(
            `${
              (ms / 60_000).toFixed(1)
            } min, ${applied.length} applied, notify queue ${
              (usageMax * 100).toFixed(3)
            } %`,
          ),
      });
      if (r.failed > 0) ctx.notes.push(`${r.failed} failed: ${r.firstError}`);
      // The last payments' OrderPaid is still on its way: let it arrive.
      const deadline = performance.now() + 30_000;
      while (applied.length < r.finished && performance.now() < deadline) {
        await sleep(50);
      }
    } finally {
      sampling = false;
      await sampler;
      await probe.stop();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
  const inWindow = (from: number, to: number) =>
    applied.filter((a) => a.at >= from && a.at < to);
  // Payments start payDelayMs after their orders: shift both windows by it.
  const d = plan.steady.payDelayMs;
  const first = inWindow(d, d + windowMs);
  const last = inWindow(durationMs - windowMs + d, durationMs + d);
  const firstRate = first.length / (windowMs / 1000);
  const lastRate = last.length / (windowMs / 1000);
  const drift = firstRate > 0
    ? Math.abs(lastRate - firstRate) / firstRate * 100
    : null;
  ctx.params = {
    rate,
    durationMs,
    windowMs,
    firstWindowPerS: firstRate,
    lastWindowPerS: lastRate,
    firstWindowP99Ms: summarize(first.map((a) => a.latency)).p99,
    lastWindowP99Ms: summarize(last.map((a) => a.latency)).p99,
  };
  return [
    figure("throughput_first_window", firstRate, "orders/s"),
    figure("throughput_last_window", lastRate, "orders/s"),
    figure("drift", drift, "%", { target: atMost(10, "<= 10 %") }),
    figure("notification_queue_usage_max", usageMax * 100, "%", {
      target: { of: "value", op: "<", bound: 1, text: "< 1 %" },
    }),
  ];
}
