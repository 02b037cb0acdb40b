/**
 * The console's pause and resume of a receiver, per sandbox: while paused,
 * its deliveries wait (lib/queue/pauses.ts).
 */
import type { Sql } from "../../lib/db/connect.ts";
import { pausedSubscribers, setPaused } from "../../lib/queue/mod.ts";
import { type SubscriberName, SUBSCRIBERS } from "../routing.ts";

/** Whether each receiver is paused in `sandboxId`, by name. */
export async function pausedReceivers(
  sql: Sql,
  sandboxId: string,
): Promise<Record<SubscriberName, boolean>> {
  const paused = new Set(await pausedSubscribers(sql, sandboxId));
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
  const { changed } = await setPaused(sql, sandboxId, name, paused, actor);
  return { name, paused, changed };
}
