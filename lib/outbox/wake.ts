/**
 * How the relay hears that an outbox has new rows.
 *
 * By default `append` sends `NOTIFY outbox` inside the sender's transaction:
 * simple, and delivered at commit only. But every NOTIFY takes one global
 * lock at commit, which serializes all committing order transactions (a
 * measured cost: bench/HISTORY.md). A process may instead register a waker
 * for its pool: `append` then calls it after commit, and the waker wakes an
 * in-process relay at once and sends at most one NOTIFY per service every
 * few milliseconds, outside the order transactions, for relays in other
 * processes.
 */
import type { Sql } from "../db/connect.ts";
import { OUTBOX_CHANNEL } from "./channel.ts";

export type OutboxWaker = (service: string) => void;

/** The relays of this process (lib/workers/mod.ts `Messaging`). */
export interface LocalRelays {
  /** Wakes this process's relay of `service`; false when it has none. */
  wake(service: string): boolean;
}

const wakers = new WeakMap<Sql, OutboxWaker>();

/** Registers the after-commit waker of a pool. */
export function setOutboxWaker(sql: Sql, waker: OutboxWaker) {
  wakers.set(sql, waker);
}

export function outboxWakerOf(sql: Sql): OutboxWaker | undefined {
  return wakers.get(sql);
}

/**
 * A waker that wakes the relay of this process (`local`) at once, and
 * only when this process runs no relay of that service, coalesces NOTIFYs
 * for the relays of other processes. The first wake of a quiet service
 * sends its NOTIFY at once; wakes that follow within `windowMs` of it share
 * one more, sent when the window ends (it may have left before their
 * commits). So an idle relay elsewhere hears at once, and a busy service
 * sends one NOTIFY a window at most, never two at the same time: at 2 ms,
 * the NOTIFYs of 1,200 orders/s cost the orders a sixth of their rate
 * (bench/HISTORY.md). Each NOTIFY is one autocommit statement with
 * synchronous_commit off (one round trip; the setting ends with that
 * statement's transaction): it is a hint, and losing one in a crash only
 * delays a relay until its poll.
 *
 * A relay of this process that was woken moves the rows itself; another
 * process's relay woken as well would find nothing, or compete for the same
 * rows. The NOTIFY sent anyway was heard by this process's own listener
 * too, and ran a second, empty move beside the receivers that were waiting
 * for the same two cores, which cost every paid order time (bench/HISTORY.md);
 * the listener skips it.
 * Should this process die between the commit and its move, the other
 * relays find the rows at their next poll.
 */
export function coalescingWaker(
  sql: Sql,
  options: {
    local?: LocalRelays;
    windowMs?: number;
    onError?: (error: unknown) => void;
  } = {},
): { wake: OutboxWaker; flush(): Promise<void> } {
  const windowMs = options.windowMs ?? 10;
  /**
   * Per service with a NOTIFY under way: "waiting" until it is sent (a wake
   * now is covered by it), then "sent" until the window after it is over
   * (a wake now gets one more NOTIFY, at the window's end).
   */
  const state = new Map<string, "waiting" | "sent">();
  /** Services woken since their last NOTIFY left. */
  const again = new Set<string>();
  /** What flush() waits for. */
  const running = new Set<Promise<void>>();
  const notify = async (service: string) => {
    do {
      state.set(service, "waiting");
      // Wakes of the same turn share this NOTIFY.
      await Promise.resolve();
      state.set(service, "sent");
      try {
        await sql`select set_config('synchronous_commit', 'off', true),
                         pg_notify(${OUTBOX_CHANNEL}, ${service})`;
      } catch (error) {
        options.onError?.(error);
      }
      await new Promise((resolve) => setTimeout(resolve, windowMs));
    } while (again.delete(service));
    state.delete(service);
  };
  const wake = (service: string) => {
    if (options.local?.wake(service)) return;
    const s = state.get(service);
    if (s === "sent") again.add(service);
    if (s) return;
    const done = notify(service);
    running.add(done);
    done.finally(() => running.delete(done));
  };
  return {
    wake,
    flush: async () => {
      while (running.size > 0) await Promise.all(running);
    },
  };
}
