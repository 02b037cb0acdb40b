/**
 * What every scenario gets: the server, the plan (sizes and durations, full
 * or quick), progress output, and what earlier scenarios measured that later
 * ones compare to (baselines, the relay's batch time, the sustainable rate,
 * the workers' memory peaks).
 */
import type { BenchServer } from "./server.ts";
import type { Progress } from "./progress.ts";
import type { Figure } from "./report.ts";

export interface Plan {
  quick: boolean;
  warmupMs: number;
  /** Duration of each closed-loop measurement (baselines, write). */
  loopMs: number;
  notifySamples: number;
  writeMs: number;
  relayRows: number;
  /** OrderPaid messages for `deliver`: six deliveries each. */
  deliverMessages: number;
  /** Jobs the peer (graphile-worker) drains, each a receiver's two writes. */
  peerJobs: number;
  steady: {
    trialMs: number;
    startRate: number;
    maxTrials: number;
    /**
     * Full-length runs that may step the found rate down (x 0.75 each);
     * one more reads back up halfway when a step down held.
     */
    maxStepDowns: number;
    runMs: number;
    idleOrders: number;
    /** Paid orders run first and not counted. */
    idleWarmup: number;
    /** From an order's commit to its payment webhook. */
    payDelayMs: number;
    drainMs: number;
  };
  wakeup: {
    samples: number;
    /** Orders run first and not counted. */
    warmup: number;
    blockedSamples: number;
    blockedPollMs: number;
  };
  console: {
    history: number;
    pending: number;
    dead: number;
    sandboxes: number;
    calls: number;
    budgetMs: number;
  };
  fairness: {
    /** A's paid orders with a slow kitchen and every delivery sent twice. */
    slowOrders: number;
    /**
     * Of those, the OrderPaid messages in the queue before B starts (all, in
     * the full run; A's own slow kitchen holds its OrderPaid back seconds).
     */
    slowPaidQueued: number;
    /** A's paid orders that pile up while the queue refuses A's sends. */
    plainOrders: number;
    /** B's paid orders, one after another, each timed. */
    quietOrders: number;
    /** How long one of B's orders is waited for; longer counts as this. */
    waitMs: number;
  };
  memoryAppMs: number;
  soakMs: number;
  /**
   * Paid orders per trial of the transports scenario (ten deliveries each),
   * and the worker process counts it runs with.
   */
  transports: { orders: number; workers: number[] };
  /** Upper bound for any drain (relay, deliver) before giving up. */
  drainTimeoutMs: number;
}

export function makePlan(quick: boolean, soakMinutes: number): Plan {
  return quick
    ? {
      quick,
      warmupMs: 200,
      loopMs: 500,
      notifySamples: 50,
      writeMs: 500,
      relayRows: 2_000,
      deliverMessages: 100,
      peerJobs: 500,
      steady: {
        trialMs: 1_000,
        startRate: 20,
        maxTrials: 2,
        maxStepDowns: 0,
        runMs: 1_500,
        idleOrders: 10,
        idleWarmup: 5,
        payDelayMs: 200,
        drainMs: 10_000,
      },
      wakeup: { samples: 30, warmup: 5, blockedSamples: 3, blockedPollMs: 200 },
      console: {
        history: 10_000,
        pending: 1_000,
        dead: 100,
        sandboxes: 10,
        calls: 20,
        budgetMs: 5_000,
      },
      fairness: {
        slowOrders: 10,
        slowPaidQueued: 1,
        plainOrders: 200,
        quietOrders: 3,
        waitMs: 15_000,
      },
      transports: { orders: 10, workers: [1] },
      memoryAppMs: 2_500,
      soakMs: soakMinutes * 60_000,
      drainTimeoutMs: 30_000,
    }
    : {
      quick,
      warmupMs: 1_000,
      loopMs: 5_000,
      notifySamples: 500,
      writeMs: 10_000,
      relayRows: 100_000,
      deliverMessages: 10_000,
      peerJobs: 60_000,
      steady: {
        trialMs: 12_000,
        startRate: 25,
        maxTrials: 8,
        maxStepDowns: 2,
        runMs: 60_000,
        idleOrders: 200,
        idleWarmup: 30,
        payDelayMs: 1_000,
        drainMs: 60_000,
      },
      wakeup: {
        samples: 500,
        warmup: 30,
        blockedSamples: 30,
        blockedPollMs: 1_000,
      },
      console: {
        history: 1_000_000,
        pending: 10_000,
        dead: 1_000,
        sandboxes: 100,
        calls: 200,
        budgetMs: 90_000,
      },
      fairness: {
        slowOrders: 30,
        slowPaidQueued: 30,
        plainOrders: 1_500,
        quietOrders: 20,
        waitMs: 60_000,
      },
      transports: { orders: 1_000, workers: [1, 3] },
      memoryAppMs: 60_000,
      soakMs: soakMinutes * 60_000,
      drainTimeoutMs: 600_000,
    };
}

/** Figures measured earlier that later scenarios compare to. */
export interface Shared {
  /**
   * Baseline figures by name, e.g. "outbox_plain_8", and the peer's, e.g.
   * "peer.order_add_job_8".
   */
  baselines: Map<string, number>;
  /** Relay messages/s with one process. */
  relayRate?: number;
  /** The highest paid-order rate at which the backlog did not grow. */
  sustainableRate?: number;
  workerPeakMb: { relay?: number; deliver?: number };
}

export interface Ctx {
  server: BenchServer;
  plan: Plan;
  progress: Progress;
  shared: Shared;
  /** What this scenario used (sizes, settings); written to the results. */
  params: Record<string, unknown>;
  notes: string[];
  /** Adds CPU seconds spent by child processes of this scenario. */
  addWorkerCpu(seconds: number): void;
  /**
   * CPU seconds so far of the bench process and of PostgreSQL (when it runs
   * on this machine), for {@link closedLoop}'s `cpu`.
   */
  cpuNow(): Record<string, number>;
}

export type Scenario = (ctx: Ctx) => Promise<Figure[]>;

/** A baseline reference for a figure: its name and value from this run. */
export function baseline(ctx: Ctx, name: string, unit: string) {
  return { name, value: ctx.shared.baselines.get(name) ?? null, unit };
}

/**
 * Thrown by a scenario that cannot run here (what it needs is absent): the
 * scenario is reported as skipped, with the reason, not as failed.
 */
export class SkipScenario extends Error {}
