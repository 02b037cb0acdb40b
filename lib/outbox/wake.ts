/**
 * How the relay hears that an outbox has new rows.
 *
 * By default `append` sends `NOTIFY outbox` inside the sender's transaction:
 * simple, and delivered at commit only. But every NOTIFY takes one global
 * lock at commit, which serializes all committing order transactions (-47 %
 * orders/s at 8 clients, measured). A process may instead register a waker
 * for its pool: `append` then calls it after commit, and the waker wakes an
 * in-process relay at once and sends at most one NOTIFY per service every
 * few milliseconds, outside the order transactions, for relays in other
 * processes.
 */
import type { Sql } from "../db/connect.ts";
import { OUTBOX_CHANNEL } from "./channel.ts";

export type OutboxWaker = (service: string) => void;

const wakers = new WeakMap<Sql, OutboxWaker>();

/** Registers the after-commit waker of a pool. */
export function setOutboxWaker(sql: Sql, waker: OutboxWaker) {
  wakers.set(sql, waker);
}

export function outboxWakerOf(sql: Sql): OutboxWaker | undefined {
  return wakers.get(sql);
}

/**
 * A waker that calls `local` at once and coalesces NOTIFYs for other
 * processes: one per service per `windowMs` at most, and never two of a
 * service at the same time. A wake that comes while a NOTIFY is on its way
 * gets one more after it, since that one may have left before its commit.
 * Each NOTIFY is one autocommit statement with synchronous_commit off (one
 * round trip; the setting ends with that statement's transaction): it is a
 * hint, and losing one in a crash only delays a relay until its poll.
 */
export function coalescingWaker(
  sql: Sql,
  options: {
    local?: OutboxWaker;
    windowMs?: number;
    onError?: (error: unknown) => void;
  } = {},
): { wake: OutboxWaker; flush(): Promise<void> } {
  const windowMs = options.windowMs ?? 2;
  /** Per service with a NOTIFY to come: whether it has left yet. */
  const state = new Map<string, "waiting" | "sending">();
  /** Services woken again while their NOTIFY was on its way. */
  const again = new Set<string>();
  /** What flush() waits for. */
  const running = new Set<Promise<void>>();
  const notify = async (service: string) => {
    do {
      state.set(service, "waiting");
      await new Promise((resolve) => setTimeout(resolve, windowMs));
      state.set(service, "sending");
      try {
        await sql`select set_config('synchronous_commit', 'off', true),
                         pg_notify(${OUTBOX_CHANNEL}, ${service})`;
      } catch (error) {
        options.onError?.(error);
      }
    } while (again.delete(service));
    state.delete(service);
  };
  const wake = (service: string) => {
    options.local?.(service);
    const s = state.get(service);
    if (s === "sending") again.add(service);
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
