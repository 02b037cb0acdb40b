/**
 * wakeup: idle workers (the bakery's relay and consumers in this process,
 * default settings, woken as bakery.ts wakes them), one order at a time:
 * from placeOrder's commit to the relay having claimed the row, and to all
 * of OrderPlaced's receivers having applied it (target, issue 19: p50 <= the
 * peer's, graphile-worker's add_job to its task starting).
 *
 * Then woken by NOTIFY alone, as a relay in another process is (same
 * targets). Then with notifications lost: the LISTEN connection is pointed at another
 * database of the same server, where no notification of this one arrives,
 * the commit does not wake the relay in process (as for a sender in another
 * process), and the poll interval is short; the delay is then the poll's. Target:
 * picked up within the poll interval plus one batch (one relay batch of 100
 * at the rate the relay scenario measured).
 */
import { connect, withDatabase } from "../../lib/db/connect.ts";
import { baseline, type Ctx } from "../context.ts";
import { OrderSource, place } from "../orders.ts";
import { type Completion, type Probe, startProbe } from "../probe.ts";
import { Progress } from "../progress.ts";
import { atMost, type Figure, figure, ratioAtMost } from "../report.ts";
import { seeded, sleep, summarize } from "../stats.ts";

interface Sample {
  claimMs: number;
  appliedMs: number;
}

async function oneAtATime(
  ctx: Ctx,
  probe: Probe,
  source: OrderSource,
  n: number,
  gap: () => number,
  timeoutMs: number,
): Promise<Sample[]> {
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) {
    await sleep(gap());
    // The order id is only known after the commit; the completion is caught
    // by a watcher registered right after, which is in time: the relay's
    // claim takes at least one more round trip than the commit's answer.
    let completed: Completion | undefined;
    let resolveDone: () => void = () => {};
    const finished = new Promise<void>((r) => resolveDone = r);
    const order = await place(source.sql, source);
    const committed = performance.now();
    probe.watch("OrderPlaced", order.orderId, (c) => {
      completed = c;
      resolveDone();
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      finished,
      new Promise<void>((r) => timer = setTimeout(r, timeoutMs)),
    ]);
    clearTimeout(timer);
    probe.unwatch("OrderPlaced", order.orderId);
    if (!completed) {
      throw new Error(`order ${i} was not applied within ${timeoutMs} ms`);
    }
    out.push({
      claimMs: completed.claimedAt - committed,
      appliedMs: completed.doneAt - committed,
    });
    ctx.progress.update(Progress.count(i + 1, n));
  }
  return out;
}

export async function wakeup(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const w = plan.wakeup;
  const db = await ctx.server.database("wakeup");
  const sql = connect(db.url, { applicationName: "bench-app" });
  const random = seeded(6);
  const figures: Figure[] = [];
  try {
    progress.step(
      `wakeup: ${w.samples} orders one at a time, notifications on`,
    );
    const source = new OrderSource(sql, "wakeup");
    /** `w.samples` orders, after a warm-up, through a probe of its own. */
    const sampled = async (localWake: boolean) => {
      const probe = await startProbe({ url: db.url, sql, localWake });
      try {
        // Warm-up: every pooled connection has prepared its statements.
        await oneAtATime(ctx, probe, source, w.warmup, () => 5, 10_000);
        return await oneAtATime(
          ctx,
          probe,
          source,
          w.samples,
          () => 5 + random() * 20,
          10_000,
        );
      } finally {
        await probe.stop();
      }
    };
    const hinted = await sampled(true);
    const claim = summarize(hinted.map((s) => s.claimMs));
    const applied = summarize(hinted.map((s) => s.appliedMs));
    progress.note(
      `claim p50 ${claim.p50?.toFixed(2)} ms p99 ${
        claim.p99?.toFixed(2)
      } ms; applied p50 ${applied.p50?.toFixed(2)} ms p99 ${
        applied.p99?.toFixed(2)
      } ms`,
    );
    figures.push(
      figure("claim_p50", claim.p50, "ms", {
        baseline: baseline(ctx, "notify_p50", "ms"),
        target: atMost(2, "<= 2 ms"),
      }),
      figure("claim_p99", claim.p99, "ms", {
        baseline: baseline(ctx, "notify_p99", "ms"),
      }),
      figure("applied_p50", applied.p50, "ms", {
        baseline: baseline(ctx, "peer.wakeup_p50", "ms"),
        target: ratioAtMost(1, "<= peer.wakeup_p50"),
      }),
      figure("applied_p99", applied.p99, "ms", {
        baseline: baseline(ctx, "peer.wakeup_p99", "ms"),
      }),
    );

    // The same with the relay out of the commit's reach, as when orders are
    // placed by another process: the waker's NOTIFY wakes it.
    progress.step(
      `wakeup: ${w.samples} orders one at a time, woken by NOTIFY only`,
    );
    const notified = await sampled(false);
    const nc = summarize(notified.map((s) => s.claimMs));
    const na = summarize(notified.map((s) => s.appliedMs));
    progress.note(
      `by NOTIFY: claim p50 ${nc.p50?.toFixed(2)} ms; applied p50 ${
        na.p50?.toFixed(2)
      } ms`,
    );
    figures.push(
      figure("notified_claim_p50", nc.p50, "ms", {
        target: atMost(2, "<= 2 ms"),
      }),
      figure("notified_applied_p50", na.p50, "ms", {
        baseline: baseline(ctx, "peer.wakeup_p50", "ms"),
        target: ratioAtMost(1, "<= peer.wakeup_p50"),
      }),
    );

    progress.step(
      `wakeup: ${w.blockedSamples} orders with notifications lost, poll ${w.blockedPollMs} ms`,
    );
    const batchMs = ctx.shared.relayRate
      ? (100 / ctx.shared.relayRate) * 1000
      : 100;
    const deaf = await startProbe({
      url: db.url,
      sql,
      listenUrl: withDatabase(db.url, "postgres"),
      localWake: false,
      pollMs: w.blockedPollMs,
    });
    let lost: Sample[];
    try {
      lost = await oneAtATime(
        ctx,
        deaf,
        source,
        w.blockedSamples,
        () => random() * w.blockedPollMs,
        w.blockedPollMs * 4 + 10_000,
      );
    } finally {
      await deaf.stop();
    }
    const lc = summarize(lost.map((s) => s.claimMs));
    const la = summarize(lost.map((s) => s.appliedMs));
    const bound = w.blockedPollMs + batchMs;
    progress.note(
      `notifications lost: claim max ${lc.max?.toFixed(0)} ms (bound ${
        bound.toFixed(0)
      } ms), applied max ${la.max?.toFixed(0)} ms`,
    );
    figures.push(
      figure("lost_claim_p50", lc.p50, "ms"),
      figure("lost_claim_max", lc.max, "ms", {
        target: atMost(
          bound,
          `<= poll ${w.blockedPollMs} + batch ${batchMs.toFixed(1)} ms`,
        ),
      }),
      figure("lost_applied_max", la.max, "ms", {
        note: "relay poll, then consumer poll: up to two intervals",
      }),
    );
    ctx.params = {
      samples: w.samples,
      lostSamples: w.blockedSamples,
      pollMs: { hinted: 5000, lost: w.blockedPollMs },
      oneBatchMs: batchMs,
      claim:
        "placeOrder commit answered -> the relay hands the claimed row to the queue (claim committed, faults read)",
      applied:
        "placeOrder commit answered -> kitchen, schedule and customers all answered 200",
      notified:
        "the commit does not wake the relay in process: it hears the after-commit waker's NOTIFY, as a relay in another process would",
      lost:
        "LISTEN connection on another database of the same server: no notification arrives",
    };
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
  return figures;
}
