/**
 * Paid orders through the running bakery (bench/probe.ts): each order is
 * placed, paid `payDelayMs` later (the time a customer takes at the
 * checkout), and timed from the payment webhook's commit (billing's
 * `recordStripeEvent`) to the moment all six receivers have applied its
 * OrderPaid.
 *
 * - `runIdle`: one paid order at a time, nothing else running;
 * - `runAtRate`: paid orders started at a fixed rate (open loop), the
 *   backlog sampled meanwhile to judge whether the rate is sustainable.
 */
import type { Sql } from "../lib/db/connect.ts";
import { openLoop, type OpenLoopResult } from "./load.ts";
import { OrderSource, pay, place } from "./orders.ts";
import { backlog, type Completion, type Probe } from "./probe.ts";
import { Progress } from "./progress.ts";
import { sleep, slope } from "./stats.ts";

/** Rows one paid order makes: 3 outbox rows and 3 + 1 + 6 deliveries. */
export const ROWS_PER_PAID_ORDER = 13;

export interface FlowEnv {
  /** The app's pool: the load and the workers share it, as in bakery.ts. */
  sql: Sql;
  /** A separate connection for counting the backlog. */
  monitor: Sql;
  probe: Probe;
  progress: Progress;
}

/** Resolves with the completion of `type` for `aggregateId`. */
function completion(probe: Probe, type: string, aggregateId: string) {
  return new Promise<Completion>((resolve) => {
    probe.watch(type, aggregateId, (c) => {
      probe.unwatch(type, aggregateId);
      resolve(c);
    });
  });
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} took over ${ms} ms`)),
        ms,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Where one paid order's time went, in ms from the webhook's commit. */
export interface StageSample {
  /** The relay claimed PaymentSucceeded. */
  paymentClaimed: number;
  /** Orders applied PaymentSucceeded (and wrote OrderPaid). */
  paymentApplied: number;
  /** The relay claimed OrderPaid. */
  paidClaimed: number;
  /** All six receivers applied OrderPaid. */
  total: number;
}

/** `n` paid orders one at a time, nothing else running. */
export async function runIdle(
  env: FlowEnv,
  n: number,
): Promise<StageSample[]> {
  const source = new OrderSource(env.sql, `idle-${Date.now()}`);
  const out: StageSample[] = [];
  for (let i = 0; i < n; i++) {
    const order = await place(env.sql, source);
    // Let OrderPlaced reach its receivers first: the webhook comes later.
    await waitForEmptyBacklog(env, 10_000);
    const payment = completion(env.probe, "PaymentSucceeded", order.orderId);
    const paid = completion(env.probe, "OrderPaid", order.orderId);
    await pay(env.sql, order);
    const t = performance.now();
    const p = await within(payment, 10_000, `PaymentSucceeded of order ${i}`);
    const o = await within(paid, 10_000, `OrderPaid of order ${i}`);
    out.push(stages(t, p, o));
    env.progress.update(Progress.count(i + 1, n));
    await sleep(10);
  }
  return out;
}

function stages(t: number, payment: Completion, paid: Completion) {
  return {
    paymentClaimed: payment.claimedAt - t,
    paymentApplied: payment.doneAt - t,
    paidClaimed: paid.claimedAt - t,
    total: paid.doneAt - t,
  };
}

/**
 * Waits until no outbox row or delivery is open, up to `ms`. The backlog
 * alone decides: a delivery is done only after its answer went through the
 * probe, so an empty backlog means every answer has been seen. (The probe's
 * own count of messages in flight also keeps a message whose first answers
 * came before the probe noted its move, and then every later wait ran to
 * its 10 s limit.)
 */
export async function waitForEmptyBacklog(env: FlowEnv, ms: number) {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (await backlog(env.monitor) === 0) {
      return true;
    }
    await sleep(5);
  }
  return false;
}

export interface RateRun {
  rate: number;
  offered: OpenLoopResult;
  latencies: number[];
  /** Where the time went, for each order whose two messages were seen. */
  stages: StageSample[];
  /** Payments committed whose OrderPaid was not applied everywhere in time. */
  incomplete: number;
  /** Backlog growth over the second half of the run, rows/s. */
  growth: number;
  endBacklog: number;
  sustainable: boolean;
  why: string;
}

export async function runAtRate(env: FlowEnv, o: {
  rate: number;
  durationMs: number;
  payDelayMs: number;
  drainMs: number;
  label: string;
}): Promise<RateRun> {
  const clients = 8;
  const sources = Array.from(
    { length: clients },
    (_, i) => new OrderSource(env.sql, `${o.label}-${i}`),
  );
  const committed = new Map<string, number>();
  const payments = new Map<string, Completion>();
  const paid = new Map<string, Completion>();
  const samples: { x: number; y: number }[] = [];
  const t0 = performance.now();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const y = await backlog(env.monitor);
      samples.push({ x: (performance.now() - t0) / 1000, y });
      env.progress.update(
        `${
          o.rate.toFixed(1)
        }/s: ${committed.size} paid, ${paid.size} applied, backlog ${y}`,
      );
      await sleep(250);
    }
  })();
  let offered: OpenLoopResult;
  try {
    offered = await openLoop({
      rate: o.rate,
      durationMs: o.durationMs,
      maxInFlight: 2_000,
      settleMs: o.payDelayMs + 30_000,
      op: async (i) => {
        const order = await place(env.sql, sources[i % clients]);
        await sleep(o.payDelayMs);
        env.probe.watch("PaymentSucceeded", order.orderId, (c) => {
          env.probe.unwatch("PaymentSucceeded", order.orderId);
          payments.set(order.orderId, c);
        });
        env.probe.watch("OrderPaid", order.orderId, (c) => {
          env.probe.unwatch("OrderPaid", order.orderId);
          paid.set(order.orderId, c);
        });
        await pay(env.sql, order);
        committed.set(order.orderId, performance.now());
      },
    });
  } finally {
    sampling = false;
    await sampler;
  }
  const loadEnd = o.durationMs / 1000;
  const during = samples.filter((s) => s.x <= loadEnd + o.payDelayMs / 1000);
  const growth = slope(during.filter((s) => s.x >= loadEnd / 2));
  const endBacklog = during.at(-1)?.y ?? 0;
  const deadline = performance.now() + o.drainMs;
  while (paid.size < committed.size && performance.now() < deadline) {
    await sleep(20);
  }
  await waitForEmptyBacklog(env, Math.max(0, deadline - performance.now()));
  const latencies: number[] = [];
  const stageSamples: StageSample[] = [];
  for (const [orderId, t] of committed) {
    const o = paid.get(orderId);
    if (o !== undefined) latencies.push(Math.max(0, o.doneAt - t));
    const p = payments.get(orderId);
    if (o !== undefined && p !== undefined) stageSamples.push(stages(t, p, o));
    env.probe.unwatch("PaymentSucceeded", orderId);
    env.probe.unwatch("OrderPaid", orderId);
  }
  const work = o.rate * ROWS_PER_PAID_ORDER;
  const reasons: string[] = [];
  if (offered.failed > 0) {
    reasons.push(`${offered.failed} failed: ${offered.firstError}`);
  }
  if (offered.late > 0.05 * offered.scheduled) {
    reasons.push(`${offered.late} of ${offered.scheduled} starts late`);
  }
  if (growth > 0.05 * work) {
    reasons.push(`backlog grew ${growth.toFixed(0)} rows/s`);
  }
  if (endBacklog > Math.max(100, work)) {
    reasons.push(`backlog ${endBacklog} rows at the end (over 1 s of work)`);
  }
  return {
    rate: o.rate,
    offered,
    latencies,
    stages: stageSamples,
    incomplete: committed.size - latencies.length,
    growth,
    endBacklog,
    sustainable: reasons.length === 0,
    why: reasons.join("; ") || "backlog flat",
  };
}
