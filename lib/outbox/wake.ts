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
 * processes: one per service per `windowMs`. The NOTIFY runs in its own
 * transaction with synchronous_commit off: it is a hint, and losing one in
 * a crash only delays a relay until its poll.
 */
export function coalescingWaker(
  sql: Sql,
  options: {
    local?: OutboxWaker;
    windowMs?: number;
    onError?: (error: unknown) => void;
  } = {},
): { wake: OutboxWaker; flush(): Promise<void> } {
  const pending = new Map<string, Promise<void>>();
  const windowMs = options.windowMs ?? 2;
  const wake = (service: string) => {
    options.local?.(service);
    if (pending.has(service)) return;
    const sent = new Promise<void>((resolve) => setTimeout(resolve, windowMs))
      .then(() => {
        pending.delete(service);
        return sql.begin(async (tx) => {
          await tx`set local synchronous_commit = off`;
          await tx`select pg_notify(${OUTBOX_CHANNEL}, ${service})`;
        });
      })
      .then(() => {}, (error) => options.onError?.(error));
    pending.set(service, sent);
  };
  return { wake, flush: async () => void await Promise.all(pending.values()) };
}
