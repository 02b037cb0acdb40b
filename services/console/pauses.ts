/**
 * The console's pause and resume of a receiver, per sandbox: while paused,
 * its deliveries wait (lib/ledger/pauses.ts), in every queue.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { pausedSubscribers, setPaused } from "../../lib/ledger/mod.ts";
import { type SubscriberName, SUBSCRIBERS } from "../routing.ts";
import { queuePools } from "../databases.ts";

/** Whether each receiver is paused in `sandboxId`, by name. */
export async function pausedReceivers(
  sql: Sql,
  sandboxId: string,
): Promise<Record<SubscriberName, boolean>> {
  // Each queue holds its own pauses (split mode: each sender's).
  const paused = new Set(
    (await Promise.all(
      queuePools(sql).map((pool) => pausedSubscribers(pool, sandboxId)),
    )).flat(),
  );
  return Object.fromEntries(
    SUBSCRIBERS.map((name) => [name, paused.has(name)]),
  ) as Record<SubscriberName, boolean>;
}

/** A receiver's pause state, as the API answers it. */
export interface ReceiverPause {
  name: SubscriberName;
  paused: boolean;
}

/** Pauses or resumes `name` in `sandboxId`, as `actor`. */
export async function pauseReceiver(
  sql: Sql,
  sandboxId: string,
  name: SubscriberName,
  paused: boolean,
  actor: string,
): Promise<ReceiverPause & { changed: boolean }> {
  let changed = false;
  for (const pool of queuePools(sql)) {
    changed = (await setPaused(pool, sandboxId, name, paused, actor)).changed ||
      changed;
  }
  return { name, paused, changed };
}
