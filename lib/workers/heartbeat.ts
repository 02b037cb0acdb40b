/**
 * The heartbeat of one process of relays or consumers: a row in
 * `queue.workers` (lib/ledger/workers_sql.ts) written when the loops have
 * started and again every `beatMs`, saying who it is (host, pid, roles,
 * carrier, version), the leases it holds and when it last claimed work;
 * deleted when it stops cleanly, so that only the dead stay behind as
 * silent. An operator's reader then tells a worker that died from one that
 * is only idle, before the backlog says so.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import {
  leaveWorkers,
  type WorkerBeat,
  writeBeat,
} from "../ledger/workers_sql.ts";
import { outboxLeases } from "../outbox/leases_sql.ts";
import { Loop } from "../wake/loop.ts";

export interface HeartbeatOptions {
  sql: Sql;
  log: Logger;
  /** Senders whose outbox rows this process's relays may hold. */
  senders: readonly string[];
  beat: Omit<WorkerBeat, "lastClaimAt">;
}

/** A running heartbeat. */
export interface Heartbeat {
  /** Notes that the process claimed or finished work just now. */
  claimed(): void;
  /** Stops beating and deletes the row. */
  stop(): Promise<void>;
}

/**
 * Writes the first beat (so the worker is listed as soon as it runs), then
 * beats every `beat.beatMs`. A beat that fails (the database away) is
 * logged and tried again: the row then turns silent, which is the truth.
 */
export async function startHeartbeat(
  options: HeartbeatOptions,
): Promise<Heartbeat> {
  const { sql, beat } = options;
  let lastClaimAt: Date | null = null;
  const write = async () => {
    const held = await outboxLeases(sql, options.senders, beat.id);
    await writeBeat(sql, { ...beat, lastClaimAt }, held);
  };
  await write();
  const loop = new Loop({
    name: "heartbeat",
    pollMs: beat.beatMs,
    log: options.log,
    tick: async () => {
      await write();
      return { more: false };
    },
  });
  // The first tick would beat again at once: start after one interval.
  const first = setTimeout(() => loop.start(), beat.beatMs);
  return {
    claimed: () => {
      lastClaimAt = new Date();
    },
    stop: async () => {
      clearTimeout(first);
      await loop.stop();
      await leaveWorkers(sql, beat.id).catch((error) =>
        options.log.warn("heartbeat_leave_failed", { error })
      );
    },
  };
}
