/**
 * relay: drain a backlog of pending OrderPlaced rows from orders.outbox into
 * the queue (each fans out into three deliveries), with 1 and then 2 relay
 * processes: separate Deno processes running bench/worker.ts, each with its
 * own pool, as `deno task worker` runs. Messages per second, from `go` to
 * the last row marked published.
 */
import { baseline, type Ctx } from "../context.ts";
import { drain } from "../drain.ts";
import { atLeast, type Figure, figure } from "../report.ts";
import { outboxBacklog } from "../seed.ts";

const TARGET = atLeast(40_000, ">= 40,000 msg/s");

export async function relay(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const figures: Figure[] = [];
  const peaks: number[] = [];
  const memoryUsage: Record<string, unknown> = {};
  const drainCpu: Record<string, number> = {};
  for (const processes of [1, 2]) {
    const db = await ctx.server.database(`relay${processes}`);
    try {
      progress.step(`relay: seeding ${plan.relayRows} pending outbox rows`);
      await outboxBacklog(db.sql, plan.relayRows);
      progress.step(`relay: draining with ${processes} process(es)`);
      const r = await drain(ctx, {
        db,
        role: "relay",
        processes,
        total: plan.relayRows,
        remaining: async () => {
          const [row] = await db.sql<{ n: number }[]>`
            select count(*)::int as n from orders.outbox where state <> 'published'`;
          return row.n;
        },
        finishedAt: async () => {
          const [row] = await db.sql<{ at: Date | null }[]>`
            select max(published_at) as at from orders.outbox`;
          return row.at;
        },
      });
      const [{ n: deliveries }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries`;
      progress.note(
        `${processes} process(es): ${Math.round(r.rate)} msg/s over ${
          r.seconds.toFixed(2)
        } s, ${deliveries} deliveries made, worker peak ${
          Math.round(r.peakMb)
        } MB`,
      );
      if (!r.complete) {
        ctx.notes.push(
          `${processes} process(es): stopped after ${plan.drainTimeoutMs} ms with ${
            plan.relayRows - r.done
          } rows left`,
        );
      }
      if (processes === 1) {
        ctx.shared.relayRate = r.rate;
      }
      peaks.push(r.peakMb);
      memoryUsage[`${processes}_process`] = r.usage;
      drainCpu[`${processes}_process`] = Math.round(r.drainCpuSeconds * 100) /
        100;
      figures.push(
        figure(`messages_per_s_${processes}_process`, r.rate, "msg/s", {
          // For reading only: the target is the absolute figure.
          baseline: baseline(ctx, "jobs_plain", "jobs/s"),
          target: TARGET,
        }),
      );
    } finally {
      await db.drop();
    }
  }
  ctx.shared.workerPeakMb.relay = Math.max(...peaks);
  ctx.params = {
    rows: plan.relayRows,
    type: "OrderPlaced (three subscribers: three deliveries per message)",
    sandboxes: 100,
    move:
      "lib/relay defaults: one statement moves 1,000 rows into the queue (mark published, message, deliveries); two moves side by side while a backlog lasts",
    messageIds: "UUIDv7 in outbox order, as lib/outbox makes them",
    processes:
      "1, then 2: separate Deno processes (bench/worker.ts relay), each with its own pool of 10",
    timing: "server clock: from go to max(published_at)",
    workerMemoryMb: memoryUsage,
    workerDrainCpuSeconds: drainCpu,
  };
  return figures;
}
