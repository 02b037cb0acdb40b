/**
 * The schedule of faults: which fault, when, and on what, drawn from a
 * seeded generator so that `--seed` repeats a run's schedule exactly. The
 * faults run one after another, each with its recovery, separated by a
 * gap; each kind is drawn once before any is drawn again, so a run of
 * eight faults has eight kinds where eight apply.
 */
import { SETTINGS } from "./processes.ts";
import { seeded } from "../kit/random.ts";

export const FAULT_KINDS = [
  "app_kill",
  "worker_kill",
  "worker_freeze",
  "postgres_kill",
  "postgres_fast",
  "postgres_immediate",
  "nats_kill",
  "nats_wipe",
  "lost_acks",
  "duplicates",
  "receiver_refuses",
  "kitchen_dead_letters",
] as const;

export type FaultKind = typeof FAULT_KINDS[number];

/** A consumer's lease: 4 delivery timeouts, at least 10 s (lib/delivery). */
const LEASE_MS = Math.max(10_000, 4 * Number(SETTINGS.DELIVERY_TIMEOUT_MS));
/** How long a delivery that keeps failing takes to become a dead letter. */
export const DEAD_AFTER_MS = SETTINGS.RETRY_DELAYS_MS.split(",")
  .reduce((sum, ms) => sum + Number(ms), 0);

/**
 * How long each kind keeps its fault on (ms), and so roughly how long it
 * takes; restarts add their own start-up time.
 */
export const HOLD_MS: Record<FaultKind, number> = {
  app_kill: 1_000,
  worker_kill: 1_000,
  // Past the lease, so that another process takes over its work.
  worker_freeze: LEASE_MS + 2_000,
  // Signals to the postmaster; the embedded cluster brings it back itself.
  postgres_kill: 0,
  postgres_fast: 0,
  postgres_immediate: 0,
  nats_kill: 3_000,
  nats_wipe: 3_000,
  lost_acks: 5_000,
  duplicates: 5_000,
  // Shorter than the retries, so that the retries get through.
  receiver_refuses: 4_000,
  // Longer than the retries, so that deliveries become dead letters, which
  // the operator then redrives.
  kitchen_dead_letters: DEAD_AFTER_MS + 3_000,
};

/** Time a kind's recovery takes, for planning the next one. */
const RECOVERY_MS: Partial<Record<FaultKind, number>> = {
  app_kill: 8_000,
  worker_kill: 5_000,
  postgres_kill: 3_000,
  postgres_fast: 3_000,
  postgres_immediate: 3_000,
  nats_kill: 2_000,
  nats_wipe: 2_000,
};

export interface PlannedFault {
  /** Seconds from the start of the load. */
  atS: number;
  kind: FaultKind;
  /** Which process, node or receiver (an index or a name). */
  target: string;
  holdMs: number;
}

/** The receivers a `receiver_refuses` fault may pick (not the kitchen's). */
const REFUSERS = ["schedule", "dispatch", "crm", "customers", "receipts"];

/**
 * The plan for `durationS` seconds of load: the first fault after a short
 * warm-up, the last one starting early enough to end within the run.
 */
export function planFaults(options: {
  seed: number;
  durationS: number;
  kinds: readonly FaultKind[];
  workers: number;
  natsNodes: number;
}): PlannedFault[] {
  const random = seeded(options.seed);
  const pick = <T>(list: readonly T[]) =>
    list[Math.floor(random() * list.length)];
  const plan: PlannedFault[] = [];
  if (options.kinds.length === 0) return plan;
  let bag: FaultKind[] = [];
  let t = Math.min(3, options.durationS / 5);
  for (let guard = 0; guard < 1000; guard++) {
    if (bag.length === 0) {
      bag = [...options.kinds];
      // Fisher-Yates with the seeded generator.
      for (let i = bag.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [bag[i], bag[j]] = [bag[j], bag[i]];
      }
    }
    const kind = bag.shift()!;
    const spanS = (HOLD_MS[kind] + (RECOVERY_MS[kind] ?? 0)) / 1000;
    if (t + spanS > options.durationS) {
      // This one does not fit; a shorter kind later in the bag might.
      if (bag.every((k) => t + HOLD_MS[k] / 1000 > options.durationS)) break;
      continue;
    }
    const target = kind === "worker_kill" || kind === "worker_freeze"
      ? String(Math.floor(random() * Math.max(1, options.workers)))
      : kind === "nats_kill" || kind === "nats_wipe"
      ? String(Math.floor(random() * options.natsNodes))
      : kind === "receiver_refuses"
      ? pick(REFUSERS)
      : kind === "kitchen_dead_letters"
      ? "kitchen"
      : "";
    plan.push({
      atS: Math.round(t * 10) / 10,
      kind,
      target,
      holdMs: HOLD_MS[kind],
    });
    t += spanS + 1 + random() * 2;
  }
  return plan;
}
