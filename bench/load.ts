/**
 * Two ways to load the database. Closed loop: N clients, each running its
 * operation back to back for a fixed time after a warm-up; the rate is what
 * completed in the measured window. Open loop: operations started on a fixed
 * schedule (rate per second), whatever the answers take, with a cap on how
 * many may be in flight; late starts are counted.
 */
import type { Progress } from "./progress.ts";

export interface ClosedLoopResult {
  ops: number;
  seconds: number;
  rate: number;
  /**
   * With `cpu`: CPU microseconds per operation in the measured window, for
   * each process that `cpu` reads (rounded).
   */
  cpuUsPerOp?: Record<string, number>;
}

/**
 * Runs `op(client)` on `clients` concurrent clients for `warmupMs` +
 * `durationMs`; counts the operations that finished inside the measured
 * window. An error in any client stops all and is thrown.
 */
export async function closedLoop(options: {
  clients: number;
  warmupMs: number;
  durationMs: number;
  op: (client: number) => Promise<void>;
  progress?: Progress;
  /** CPU seconds so far, by process; read when the window opens and closes. */
  cpu?: () => Record<string, number>;
}): Promise<ClosedLoopResult> {
  const start = performance.now();
  const from = start + options.warmupMs;
  const until = from + options.durationMs;
  let ops = 0;
  let failed: unknown;
  let cpuFrom: Record<string, number> | undefined;
  let cpuUntil: Record<string, number> | undefined;
  const cpu = options.cpu;
  const windowTimers = cpu
    ? [
      setTimeout(() => cpuFrom = cpu(), options.warmupMs),
      setTimeout(() => cpuUntil = cpu(), options.warmupMs + options.durationMs),
    ]
    : [];
  const ticker = setInterval(() => {
    const now = performance.now();
    options.progress?.update(
      now < from
        ? "warming up"
        : `${ops} ops, ${Math.round(ops / ((now - from) / 1000))}/s`,
    );
  }, 250);
  try {
    await Promise.all(
      Array.from({ length: options.clients }, async (_, client) => {
        while (failed === undefined && performance.now() < until) {
          try {
            await options.op(client);
          } catch (error) {
            failed ??= error;
            return;
          }
          const now = performance.now();
          if (now >= from && now < until) ops++;
        }
      }),
    );
  } finally {
    clearInterval(ticker);
    for (const t of windowTimers) clearTimeout(t);
  }
  // The last operations may end before the closing timer fires.
  if (cpu && cpuFrom && !cpuUntil) cpuUntil = cpu();
  if (failed !== undefined) throw failed;
  const seconds = options.durationMs / 1000;
  const result: ClosedLoopResult = { ops, seconds, rate: ops / seconds };
  if (cpuFrom && cpuUntil && ops > 0) {
    const from = cpuFrom;
    result.cpuUsPerOp = Object.fromEntries(
      Object.entries(cpuUntil).map((
        [k, v],
      ) => [k, Math.round((v - from[k]) * 1e6 / ops)]),
    );
  }
  return result;
}

export interface OpenLoopResult {
  scheduled: number;
  started: number;
  finished: number;
  failed: number;
  /** Starts more than 100 ms behind their schedule. */
  late: number;
  firstError?: string;
}

/**
 * Starts `op(i)` at `rate` per second for `durationMs`; at most `maxInFlight`
 * run at once (a start that finds no room waits, and is late). Waits for
 * the operations in flight, up to `settleMs`, before it returns.
 */
export async function openLoop(options: {
  rate: number;
  durationMs: number;
  maxInFlight: number;
  op: (i: number) => Promise<void>;
  settleMs?: number;
  onTick?: (elapsedMs: number) => void;
}): Promise<OpenLoopResult> {
  const total = Math.max(
    1,
    Math.floor(options.rate * options.durationMs / 1000),
  );
  const interval = 1000 / options.rate;
  const t0 = performance.now();
  const inFlight = new Set<Promise<void>>();
  const result: OpenLoopResult = {
    scheduled: total,
    started: 0,
    finished: 0,
    failed: 0,
    late: 0,
  };
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    let now = performance.now();
    if (due > now) {
      await new Promise((r) => setTimeout(r, due - now));
      now = performance.now();
    }
    while (inFlight.size >= options.maxInFlight) {
      await Promise.race(inFlight);
    }
    if (performance.now() - due > 100) result.late++;
    result.started++;
    const running: Promise<void> = options.op(i).then(
      () => {
        result.finished++;
      },
      (error) => {
        result.failed++;
        result.firstError ??= String(error?.message ?? error);
      },
    ).finally(() => inFlight.delete(running));
    inFlight.add(running);
    options.onTick?.(performance.now() - t0);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(inFlight),
    new Promise<void>((r) => {
      timer = setTimeout(r, options.settleMs ?? 30_000);
    }),
  ]);
  clearTimeout(timer);
  return result;
}
