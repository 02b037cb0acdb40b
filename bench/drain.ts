/**
 * Drains a backlog with worker processes (bench/worker.ts) and times it.
 * The workers start, open their pools and wait; on `go` the clock starts
 * (read from the server, like the finishing timestamps, so one clock
 * measures both ends); the backlog is polled for progress until it is empty
 * or time runs out; the end is the last finishing timestamp the workers
 * wrote. Their memory is sampled from /proc the whole time.
 */
import type { Ctx } from "./context.ts";
import type { BenchDb } from "./server.ts";
import { BenchChild, taskV8Flags } from "./child.ts";
import { Progress } from "./progress.ts";
import { PROFILE_DIR, Profiler } from "./profile.ts";
import { sleep } from "./stats.ts";

export interface DrainResult {
  done: number;
  seconds: number;
  rate: number;
  /** Highest peak resident memory among the workers, MB. */
  peakMb: number;
  complete: boolean;
  /** Deno.memoryUsage() of each worker at the end, MB. */
  usage: Record<string, number>[];
  /** CPU seconds the workers spent between go and the end. */
  drainCpuSeconds: number;
}

export async function drain(ctx: Ctx, o: {
  db: BenchDb;
  role: "relay" | "consume";
  processes: number;
  total: number;
  /** Rows still to do. */
  remaining: () => Promise<number>;
  /** The last finishing timestamp the workers wrote (server clock). */
  finishedAt: () => Promise<Date | null>;
}): Promise<DrainResult> {
  const children: BenchChild[] = [];
  const ports: number[] = [];
  const profilers: Profiler[] = [];
  try {
    for (let i = 0; i < o.processes; i++) {
      const inspect = PROFILE_DIR ? await Profiler.flag() : undefined;
      if (inspect) ports.push(inspect.port);
      children.push(
        new BenchChild(
          "bench/worker.ts",
          [o.role],
          { BENCH_WORKER_DATABASE_URL: o.db.url },
          [...taskV8Flags("worker"), ...(inspect ? [inspect.flag] : [])],
        ),
      );
    }
    for (const c of children) await c.expect("ready");
    for (const port of ports) {
      const profiler = await Profiler.connect(port);
      await profiler.start();
      profilers.push(profiler);
    }
    // Every drain starts with the earlier scenarios' writes on disk, so none
    // pays for writing out what ran before it (a server of
    // BENCH_DATABASE_URL may not let this role checkpoint: then it doesn't).
    await o.db.sql`checkpoint`.catch(() => {});
    const cpuBefore = children.map((c) => c.cpuSeconds());
    const [{ t0 }] = await o.db.sql<
      { t0: Date }[]
    >`select clock_timestamp() as t0`;
    const started = performance.now();
    await Promise.all(children.map((c) => c.send("go")));
    // Each poll is a count over the backlog that competes with the workers
    // for the same cores (4 % of the server's time at 200 ms, measured); the
    // end is the workers' own last timestamp, so a slow poll costs nothing.
    const pollMs = ctx.plan.quick ? 50 : 1000;
    let left = o.total;
    while (performance.now() - started < ctx.plan.drainTimeoutMs) {
      left = await o.remaining();
      ctx.progress.update(Progress.count(o.total - left, o.total));
      if (left === 0) break;
      await sleep(pollMs);
    }
    const elapsed = (performance.now() - started) / 1000;
    for (const [i, profiler] of profilers.entries()) {
      await Deno.mkdir(PROFILE_DIR!, { recursive: true });
      const file = `${PROFILE_DIR}/${o.role}-${children[i].pid}.cpuprofile`;
      ctx.progress.note(`${file}\n${await profiler.stop(file)}`);
    }
    const end = await o.finishedAt();
    const complete = left === 0;
    const seconds = complete && end
      ? Math.max(0.001, (end.getTime() - t0.getTime()) / 1000)
      : elapsed;
    const done = o.total - left;
    // Where the memory is: V8's heap or outside it (the worker tells).
    const usage: Record<string, number>[] = [];
    for (const c of children) {
      await c.send("mem");
      const m = await c.expect("mem", 10_000) as Record<string, number>;
      usage.push(Object.fromEntries(
        Object.entries(m).map(([k, v]) => [k, Math.round(v / 1048576)]),
      ));
    }
    let peakMb = 0;
    let drainCpu = 0;
    for (const [i, c] of children.entries()) {
      const stopped = await c.stop();
      peakMb = Math.max(peakMb, stopped.peakMb);
      // All of it (start-up included) counts as the workers'; the drain's
      // own share is kept apart.
      ctx.addWorkerCpu(stopped.cpuSeconds);
      drainCpu += Math.max(0, stopped.cpuSeconds - cpuBefore[i]);
    }
    return {
      done,
      seconds,
      rate: done / seconds,
      peakMb,
      complete,
      usage,
      drainCpuSeconds: drainCpu,
    };
  } finally {
    for (const c of children) c.kill();
    for (const c of children) await c.closed();
  }
}
