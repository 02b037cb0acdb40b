/**
 * steady: paid orders through the whole bakery in this process (the relay
 * and consumers as startBakeryMessaging assembles them, one pool of 10
 * shared with the load, as bakery.ts shares it with the web app).
 *
 * 1. No other load: one paid order at a time; webhook commit to all six
 *    receivers applied (targets p50 <= 10 ms, p99 <= 30 ms).
 * 2. A short search for the highest rate at which the backlog does not
 *    grow: short trials, doubling until one fails, then halving the gap.
 * 3. That rate for the full duration, which verifies it, and half of it:
 *    the same latency, p50/p95/p99/max (target at half the rate: p99 <=
 *    60 ms). A rate the full run does not sustain is stepped down by a
 *    quarter, at most twice; when a step down holds, one more full run
 *    halfway back up reads the rate to an eighth instead of a quarter.
 *
 * The rate is read against what a paid order must write with no queue at
 * all (the paid_order_plain_8 baseline; target >= 0.5 of it, issue 55),
 * and the CPU a paid order cost at that rate, in this process and in
 * PostgreSQL, against the same baseline's.
 */
import { connect } from "../../lib/db/connect.ts";
import { baseline, type Ctx } from "../context.ts";
import {
  type FlowEnv,
  type RateRun,
  runAtRate,
  runIdle,
  type StageSample,
  waitForEmptyBacklog,
} from "../paid_flow.ts";
import { startProbe } from "../probe.ts";
import { atMost, type Figure, figure, ratioAtLeast } from "../report.ts";
import { cpuSeconds, postgresCpuSeconds } from "../procfs.ts";
import { round, summarize } from "../stats.ts";

export async function steady(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const s = plan.steady;
  const db = await ctx.server.database("steady");
  const sql = connect(db.url, { applicationName: "bench-app" });
  const figures: Figure[] = [];
  const runs: Record<string, unknown>[] = [];
  try {
    const probe = await startProbe({ url: db.url, sql });
    const env: FlowEnv = { sql, monitor: db.sql, probe, progress };
    const run = async (rate: number, durationMs: number, label: string) => {
      progress.step(`steady: ${label} at ${rate.toFixed(1)} paid orders/s`);
      const cpu = cpuMeter(ctx.server.postmasterPid);
      const r = await runAtRate(env, {
        rate,
        durationMs,
        payDelayMs: s.payDelayMs,
        drainMs: s.drainMs,
        label,
      });
      const p = summarize(r.latencies);
      // CPU a paid order cost: where the two cores go at this rate.
      const cost = cpu.perPaid(p.n);
      runs.push({
        run: label,
        rate: Math.round(rate * 10) / 10,
        seconds: durationMs / 1000,
        sustainable: r.sustainable,
        why: r.why,
        paid: p.n,
        incomplete: r.incomplete,
        p99Ms: p.p99,
        growthRowsPerS: Math.round(r.growth),
        endBacklog: r.endBacklog,
        cpuMsPerPaid: cost,
      });
      progress.note(
        `${label} ${rate.toFixed(1)}/s: ${
          r.sustainable ? "sustained" : "NOT sustained"
        } (${r.why}); p50 ${p.p50?.toFixed(1)} ms, p99 ${
          p.p99?.toFixed(1)
        } ms, ${r.incomplete} incomplete; CPU a paid order: this process ${
          cost.process ?? "-"
        } ms, PostgreSQL ${cost.postgres ?? "-"} ms`,
      );
      if (r.incomplete > 0) {
        ctx.notes.push(
          `${label}: ${r.incomplete} paid orders not applied at all six receivers within ${s.drainMs} ms`,
        );
      }
      await waitForEmptyBacklog(env, s.drainMs);
      return { ...r, cost };
    };
    try {
      progress.step(`steady: ${s.idleOrders} paid orders, one at a time`);
      // Warm-up: every pooled connection has prepared its statements.
      await runIdle(env, s.idleWarmup);
      figures.push(...idleFigures(ctx, await runIdle(env, s.idleOrders)));

      let rate = s.startRate;
      let good: number | undefined;
      let bad: number | undefined;
      for (let t = 0; t < s.maxTrials && rate >= 1; t++) {
        const r = await run(rate, s.trialMs, `trial ${t + 1}`);
        if (r.sustainable) good = rate;
        else bad = rate;
        if (bad === undefined) rate *= 2;
        else if (good === undefined) rate /= 2;
        else rate = (good + bad) / 2;
        if (
          good !== undefined && bad !== undefined && (bad - good) / good < 0.15
        ) break;
      }
      if (good === undefined) {
        ctx.notes.push(
          "no trial rate was sustainable; the lowest rate tried is used",
        );
        good = Math.max(1, rate);
      }
      let atRate = await run(good, s.runMs, "at_rate");
      let failed: number | undefined;
      for (let step = 0; step < s.maxStepDowns && !atRate.sustainable; step++) {
        ctx.notes.push(
          `${good.toFixed(1)}/s was not sustained for ${
            s.runMs / 1000
          } s (${atRate.why}); stepped down by a quarter`,
        );
        failed = good;
        good *= 0.75;
        atRate = await run(good, s.runMs, "at_rate");
      }
      // A quarter is coarse: the rate held lies between this one and the
      // one that failed, and the sustainable figure moved by a tenth
      // between runs of the same code for it (bench/HISTORY.md).
      if (atRate.sustainable && failed !== undefined) {
        const between = (good + failed) / 2;
        const r = await run(between, s.runMs, "at_rate");
        if (r.sustainable) [good, atRate] = [between, r];
        else {
          ctx.notes.push(
            `${between.toFixed(1)}/s, halfway back up, was not sustained for ${
              s.runMs / 1000
            } s (${r.why}); ${good.toFixed(1)}/s is kept`,
          );
        }
      }
      ctx.shared.sustainableRate = good;
      figures.push(
        figure("sustainable_rate", good, "paid orders/s", {
          baseline: baseline(ctx, "paid_order_plain_8", "paid orders/s"),
          target: ratioAtLeast(0.5, ">= 0.5 x paid_order_plain_8"),
          note:
            "highest rate whose backlog did not grow: short trials, then checked by the full-length run",
        }),
        ...cpuFigures(ctx, atRate.cost),
        ...latencyFigures("at_rate", atRate),
        ...latencyFigures(
          "half_rate",
          await run(good / 2, s.runMs, "half_rate"),
        ),
      );
    } finally {
      await probe.stop();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
  ctx.params = {
    idleOrders: s.idleOrders,
    idleWarmup: s.idleWarmup,
    trialMs: s.trialMs,
    runMs: s.runMs,
    payDelayMs: s.payDelayMs,
    measured:
      "from recordStripeEvent's commit to the sixth receiver answering 200 for OrderPaid",
    sustainable:
      "no failures, under 5 % late starts, backlog slope over the second half under 5 % of the work per second, backlog at the end under 1 s of work",
    workers:
      "in this process: relays for orders and billing, 4 consumers, default settings (poll 5 s)",
    runs,
  };
  return figures;
}

/**
 * The CPU a paid order cost at the sustainable rate (the full-length run),
 * in this process and in PostgreSQL, each against what the
 * paid_order_plain_8 baseline's paid order cost there; none where it could
 * not be read (PostgreSQL on another machine).
 */
function cpuFigures(
  ctx: Ctx,
  cost: { process: number | null; postgres: number | null },
): Figure[] {
  const notes = {
    process:
      "CPU of this process a paid order at the sustainable rate: the load, the relays, the consumers and the receivers",
    postgres: "CPU of PostgreSQL a paid order at the sustainable rate",
  };
  return (["process", "postgres"] as const).flatMap((proc) =>
    cost[proc] === null ? [] : [
      figure(`cpu_per_paid_${proc}`, cost[proc], "ms/paid order", {
        baseline: baseline(
          ctx,
          `paid_order_plain_8_cpu_${proc}`,
          "ms/paid order",
        ),
        note: notes[proc],
      }),
    ]
  );
}

function idleFigures(ctx: Ctx, samples: StageSample[]): Figure[] {
  const idle = summarize(samples.map((x) => x.total));
  ctx.progress.note(
    `no other load: p50 ${idle.p50?.toFixed(1)} ms, p99 ${
      idle.p99?.toFixed(1)
    } ms`,
  );
  return [
    figure("idle_p50", idle.p50, "ms", {
      baseline: baseline(ctx, "notify_p50", "ms"),
      target: atMost(10, "<= 10 ms"),
    }),
    figure("idle_p95", idle.p95, "ms"),
    figure("idle_p99", idle.p99, "ms", { target: atMost(30, "<= 30 ms") }),
    figure("idle_max", idle.max, "ms"),
    ...stageFigures("idle", samples),
  ];
}

/**
 * Each stage of a paid order's way, from the webhook's commit: its p50, and
 * at a rate its p99 too, which says which stage the slow orders lost their
 * time in.
 */
function stageFigures(
  label: string,
  samples: StageSample[],
  quantiles: readonly ("p50" | "p99")[] = ["p50"],
): Figure[] {
  const stages = [
    [
      "payment_claimed",
      (x: StageSample) => x.paymentClaimed,
      "relay claimed PaymentSucceeded",
    ],
    [
      "payment_applied",
      (x: StageSample) => x.paymentApplied,
      "orders applied PaymentSucceeded",
    ],
    [
      "paid_claimed",
      (x: StageSample) => x.paidClaimed,
      "relay claimed OrderPaid",
    ],
  ] as const;
  return quantiles.flatMap((q) =>
    stages.map(([name, f, what]) =>
      figure(`${label}_${q}_${name}`, summarize(samples.map(f))[q], "ms", {
        note: `webhook commit -> ${what}`,
      })
    )
  );
}

function latencyFigures(label: string, run: RateRun): Figure[] {
  const p = summarize(run.latencies);
  return [
    figure(`${label}_p50`, p.p50, "ms"),
    figure(`${label}_p95`, p.p95, "ms"),
    figure(
      `${label}_p99`,
      p.p99,
      "ms",
      label === "half_rate" ? { target: atMost(60, "<= 60 ms") } : {},
    ),
    figure(`${label}_max`, p.max, "ms"),
    ...(label === "half_rate"
      ? stageFigures(label, run.stages, ["p50", "p99"])
      : []),
  ];
}

/**
 * CPU used from now on by this process (the load, the relays, the
 * consumers and the receivers) and by PostgreSQL, per paid order.
 */
function cpuMeter(postmaster: number | null) {
  const pg = () => postmaster ? postgresCpuSeconds(postmaster) : null;
  const process0 = cpuSeconds(Deno.pid);
  const pg0 = pg();
  const per = (s0: number | null, s1: number | null, n: number) =>
    s0 === null || s1 === null || n === 0 ? null : round((s1 - s0) * 1000 / n);
  return {
    perPaid: (n: number) => ({
      process: per(process0, cpuSeconds(Deno.pid), n),
      postgres: per(pg0, pg(), n),
    }),
  };
}
