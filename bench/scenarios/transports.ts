/**
 * transports: the same backlog of paid orders drained over the PostgreSQL
 * queue and over JetStream, with one and with three `deno task worker`
 * processes (bench/transports.ts trial: the whole chain, from the release
 * of the held outboxes to the last delivery done, on the server clock).
 * Figures: the relays' published messages per second and the applied
 * deliveries per second of each; the target (issue 19) is JetStream's
 * applied deliveries per second with one worker >= 0.8 x the PostgreSQL
 * queue's with one worker, of the same run. Skipped, with the reason, when
 * no JetStream answers (NATS_URL, default the machine's 127.0.0.1:4222).
 */
import { type Ctx, SkipScenario } from "../context.ts";
import { type Figure, figure, ratioAtLeast } from "../report.ts";
import { natsMissing, type Trial, trial } from "../transports.ts";

const QUEUES = ["postgres", "jetstream"] as const;

export async function transports(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const missing = await natsMissing();
  if (missing) throw new SkipScenario(missing);
  const trials: Trial[] = [];
  const applied = new Map<string, number>();
  const figures: Figure[] = [];
  for (const workers of plan.transports.workers) {
    for (const queue of QUEUES) {
      progress.step(
        `transports: ${plan.transports.orders} paid orders over ${queue}, ${workers} worker(s)`,
      );
      const db = await ctx.server.database(`tr_${queue}_${workers}`);
      try {
        const t = await trial(
          db,
          { queue, workers, run: 1, orders: plan.transports.orders },
          ctx.server.postmasterPid,
        );
        trials.push(t);
        if (t.cpu.workers !== null) ctx.addWorkerCpu(t.cpu.workers);
        progress.note(
          `${queue}, ${workers} worker(s): ${t.appliedPerSecond} applied/s, ${t.publishedPerSecond} published/s`,
        );
        const key = `${queue}_${workers}w`;
        applied.set(key, t.appliedPerSecond);
        const pg = `postgres_${workers}w`;
        figures.push(
          figure(`${key}_published_per_s`, t.publishedPerSecond, "msg/s", {
            note:
              "three messages per paid order over the time from the release to the last one published; OrderPaid waits for the payment's delivery, so this is the chain's pace, not a relay draining alone",
          }),
          figure(
            `${key}_applied_per_s`,
            t.appliedPerSecond,
            "deliveries/s",
            queue === "jetstream"
              ? {
                baseline: {
                  name: `transports/${pg}_applied_per_s`,
                  value: applied.get(pg) ?? null,
                  unit: "deliveries/s",
                },
                ...(workers === 1
                  ? {
                    target: ratioAtLeast(
                      0.8,
                      ">= 0.8 x the PostgreSQL queue's, one worker",
                    ),
                  }
                  : {}),
              }
              : {},
          ),
        );
      } finally {
        await db.drop();
      }
    }
  }
  ctx.params = {
    orders: plan.transports.orders,
    workers: plan.transports.workers,
    perOrder: "three messages, ten deliveries",
    timing:
      "server clock: from the release of the held outboxes to max(done_at) (applied) and to max(published_at) (published)",
    trials,
  };
  return figures;
}
