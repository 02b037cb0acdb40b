/**
 * relay: drain a backlog of pending OrderPlaced rows from orders.outbox into
 * the queue (each fans out into three deliveries), with 1 and then 2 relay
 * processes: separate Deno processes running bench/worker.ts, each with its
 * own pool, as `deno task worker` runs. Messages per second, from `go` to
 * the last row marked published.
 *
 * Then, for reading the miss, the relay's move statement alone in this
 * process, twice: with the bakery's routing (three deliveries per message)
 * and with none (messages only: what a queue that made deliveries when a
 * consumer claims them would leave the relay to do).
 */
import { connect } from "../../lib/db/connect.ts";
import { Ledger, type Routing } from "../../lib/ledger/mod.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { ROUTING } from "../../services/routing.ts";
import { baseline, type Ctx } from "../context.ts";
import { drain } from "../drain.ts";
import { type Figure, figure } from "../report.ts";
import type { BenchDb } from "../server.ts";
import { outboxBacklog } from "../seed.ts";

/** Moves side by side, as the relay runs them while a backlog lasts. */
const SIDE_BY_SIDE = 2;
/** Rows per move, the relay's default. */
const BATCH = 1_000;

/**
 * Drains orders.outbox with `PgMove.move` loops in this process (no
 * relay loop, no worker); messages per second.
 */
async function moveLoops(db: BenchDb, routing: Routing): Promise<number> {
  const sql = connect(db.url, { max: SIDE_BY_SIDE });
  try {
    const shortcut = new PgMove(new Ledger(sql, routing));
    let moved = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: SIDE_BY_SIDE }, async () => {
        for (;;) {
          const { rows } = await shortcut.move("orders", BATCH);
          if (rows === 0) return;
          moved += rows;
        }
      }),
    );
    return moved / ((performance.now() - t0) / 1000);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * WAL segment files the server has now; null where this role may not list
 * them (a server of BENCH_DATABASE_URL).
 */
async function walSegmentCount(db: BenchDb): Promise<number | null> {
  try {
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_ls_waldir()`;
    return row.n;
  } catch {
    return null;
  }
}

export async function relay(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const figures: Figure[] = [];
  const peaks: number[] = [];
  const memoryUsage: Record<string, unknown> = {};
  const drainCpu: Record<string, number> = {};
  /** WAL segment files when each measured drain starts. */
  const walSegments: Record<string, number | null> = {};
  const drainBacklog = (db: BenchDb, processes: number, rows: number) =>
    drain(ctx, {
      db,
      role: "relay",
      processes,
      total: rows,
      remaining: async () => {
        const [row] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from orders.outbox`;
        return row.n;
      },
      finishedAt: async () => {
        const [row] = await db.sql<{ at: Date | null }[]>`
          select max(published_at) as at from queue.messages
           where source = 'orders'`;
        return row.at;
      },
    });
  // The first drain after the baselines ran a fifth slower than the same
  // drain run again (23,552 against about 32,000 msg/s, same code), so one
  // unmeasured drain brings the server to the state the measured drains
  // start from. It is as large as they are: a drain writes about 420 MB of
  // WAL, and a fresh cluster has the segments of what it wrote so far. A
  // warm-up of a quarter left 8 segments of the 28 a drain fills, so the
  // one-process drain made the other 20 new (and was 0.77 of the move alone
  // on average, against 0.87 after a full warm-up; bench/HISTORY.md), while
  // the two-process drain after it found them all.
  {
    const db = await ctx.server.database("relay_warmup");
    try {
      progress.step(`relay: warming up (${plan.relayRows} rows, not measured)`);
      await outboxBacklog(db.sql, plan.relayRows);
      await drainBacklog(db, 1, plan.relayRows);
    } finally {
      await db.drop();
    }
  }
  for (const processes of [1, 2]) {
    const db = await ctx.server.database(`relay${processes}`);
    try {
      progress.step(`relay: seeding ${plan.relayRows} pending outbox rows`);
      await outboxBacklog(db.sql, plan.relayRows);
      walSegments[`${processes}_process`] = await walSegmentCount(db);
      progress.step(`relay: draining with ${processes} process(es)`);
      const r = await drainBacklog(db, processes, plan.relayRows);
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
          baseline: baseline(ctx, "jobs_plain", "jobs/s"),
        }),
      );
    } finally {
      await db.drop();
    }
  }
  const moves: Record<string, number> = {};
  for (
    const [label, routing] of [["with", ROUTING], ["without", {}]] as const
  ) {
    const db = await ctx.server.database(`move_${label}`);
    try {
      progress.step(`relay: the move statement alone, ${label} deliveries`);
      await outboxBacklog(db.sql, plan.relayRows);
      moves[label] = await moveLoops(db, routing);
      progress.note(
        `move ${label} deliveries: ${Math.round(moves[label])} msg/s`,
      );
    } finally {
      await db.drop();
    }
  }
  figures.push(
    figure("move_with_deliveries", moves.with, "msg/s", {
      baseline: baseline(ctx, "jobs_plain", "jobs/s"),
      note:
        "PgMove.move alone in the bench process, two side by side, the bakery's routing (three deliveries per message)",
    }),
    figure("move_without_deliveries", moves.without, "msg/s", {
      baseline: baseline(ctx, "jobs_plain", "jobs/s"),
      note:
        "the same with no routes: outbox rows marked and messages stored, no deliveries (a reference for a queue that makes deliveries at claim time; not the product)",
    }),
  );
  ctx.shared.workerPeakMb.relay = Math.max(...peaks);
  ctx.params = {
    rows: plan.relayRows,
    warmup:
      `one unmeasured drain of ${plan.relayRows} rows (1 process) before the measured ones, as large as they are (the WAL segments a drain fills exist when they start)`,
    walSegments,
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
    moveAlone:
      `move_with_deliveries and move_without_deliveries: ${SIDE_BY_SIDE} PgMove.move loops of ${BATCH} rows in the bench process, a fresh backlog each`,
  };
  return figures;
}
