/**
 * What each fault of the schedule does, and how it ends. Processes are hurt
 * with signals; the bakery's own fault switches are flipped in every
 * shopper's sandbox through the console's API, as an operator flips them;
 * the kitchen's dead letters are redriven through the same API. A fault
 * ends only once what it broke is back (the app healthy, the node ready),
 * so the next fault meets a whole system.
 */
import type { NatsNodes } from "./nats.ts";
import { type Child, type Postgres, waitHealthy } from "./processes.ts";
import type { FaultKind, PlannedFault } from "./schedule.ts";
import { type Shopper, sleep } from "./shoppers.ts";

/** Everything a fault can reach. */
export interface Rig {
  postgres: Postgres;
  app: Child;
  appPort: number;
  workers: Child[];
  nats?: NatsNodes;
  shoppers: Shopper[];
}

/** A fault as it happened: when (ms from the load's start), and what. */
export interface FaultEvent {
  kind: FaultKind;
  target: string;
  startMs: number;
  endMs: number;
  /** What it did, for people: "SIGKILL pid 123", "redrove 14". */
  detail: string;
  error?: string;
}

/** Sets `switches` in every shopper's sandbox; how many took them. */
export async function setSwitches(
  shoppers: Shopper[],
  switches: Record<string, boolean>,
): Promise<number> {
  const taken = await Promise.all(shoppers.map((s) => s.setFaults(switches)));
  return taken.filter(Boolean).length;
}

/** The switch each switch-kind fault turns on for its hold. */
function switchOf(fault: PlannedFault): string | undefined {
  switch (fault.kind) {
    case "lost_acks":
      return "lostAcks";
    case "duplicates":
      return "duplicateDeliveries";
    case "receiver_refuses":
      return `${fault.target}Refuses`;
    case "kitchen_dead_letters":
      return "kitchenRefuses";
  }
  return undefined;
}

/** Runs one fault to its end; returns what it did. */
export async function runFault(
  rig: Rig,
  fault: PlannedFault,
  stop: AbortSignal,
): Promise<string> {
  const worker = rig.workers.length
    ? rig.workers[Number(fault.target) % rig.workers.length]
    : undefined;
  const name = switchOf(fault);
  if (name) {
    const sandboxes = await setSwitches(rig.shoppers, { [name]: true });
    await sleep(fault.holdMs, stop);
    await setSwitches(rig.shoppers, { [name]: false });
    if (fault.kind !== "kitchen_dead_letters") {
      return `${name} on in ${sandboxes} sandboxes for ${fault.holdMs} ms`;
    }
    // The operator redrives once the kitchen answers again; one that dies
    // after this (a retry within the switches' cache time) is left to the
    // operator's sweep when the drill settles.
    const redriven = await redriveAll(rig.shoppers, "kitchen");
    return `kitchenRefuses on for ${fault.holdMs} ms, then ${redriven} dead letters redriven`;
  }
  switch (fault.kind) {
    case "app_kill": {
      const pid = rig.app.pid;
      await rig.app.kill("SIGKILL");
      await sleep(fault.holdMs);
      await rig.app.start();
      rig.app.restarts++;
      await waitHealthy(rig.appPort);
      return `SIGKILL app pid ${pid}; started again, healthy`;
    }
    case "worker_kill": {
      const pid = worker!.pid;
      await worker!.kill("SIGKILL");
      await sleep(fault.holdMs);
      await worker!.start();
      worker!.restarts++;
      return `SIGKILL ${worker!.name} pid ${pid}; started again`;
    }
    case "worker_freeze": {
      const frozen = worker ?? rig.app;
      await frozen.kill("SIGSTOP");
      await sleep(fault.holdMs);
      await frozen.kill("SIGCONT");
      return `SIGSTOP ${frozen.name} pid ${frozen.pid} for ${fault.holdMs} ms, then SIGCONT`;
    }
    case "postgres_kill":
    case "postgres_fast":
    case "postgres_immediate": {
      const signal = fault.kind === "postgres_kill"
        ? "SIGKILL"
        : fault.kind === "postgres_fast"
        ? "SIGINT"
        : "SIGQUIT";
      const pid = await rig.postgres.signal(signal);
      const back = await postgresBack(rig.postgres, pid);
      const how = signal === "SIGKILL"
        ? "SIGKILL"
        : signal === "SIGINT"
        ? "fast shutdown (SIGINT)"
        : "immediate shutdown (SIGQUIT)";
      return `${how} of postmaster ${pid}; back as ${back}`;
    }
    case "nats_kill":
    case "nats_wipe": {
      const wipe = fault.kind === "nats_wipe";
      const i = Number(fault.target);
      await rig.nats!.kill(i, wipe);
      await sleep(fault.holdMs);
      await rig.nats!.restart(i);
      return `SIGKILL nats node ${i}${
        wipe ? ", its store wiped" : ""
      }; started again after ${fault.holdMs} ms`;
    }
  }
  throw new Error(`no action for fault ${fault.kind}`);
}

/** Redrives `subscriber`'s dead letters (all when none) in every sandbox. */
export async function redriveAll(
  shoppers: Shopper[],
  subscriber?: string,
): Promise<number> {
  const counts = await Promise.all(shoppers.map((s) => s.redrive(subscriber)));
  return counts.reduce((a, b) => a + b, 0);
}

/** Waits (30 s at most) for a postmaster other than `old` to run. */
async function postgresBack(
  postgres: Postgres,
  old: number | null,
): Promise<number | string> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const pid = await postgres.postmasterPid();
    if (pid && pid !== old) {
      try {
        Deno.kill(pid, "SIGCONT"); // a no-op that says the pid is alive
        return pid;
      } catch {
        // A stale lock file.
      }
    }
    await sleep(100);
  }
  return "not yet (30 s)";
}
