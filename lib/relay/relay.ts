/**
 * The relay: move what a service owes from its outbox into the queue.
 *
 * 1. Claim due rows (a lease, in the service's transaction, committed).
 * 2. Publish the batch to the queue in one statement (the queue ignores ids
 *    it already has).
 * 3. Mark the rows published, fenced by the lease.
 *
 * A crash between 2 and 3 leaves the rows claimed; when the lease expires
 * they are claimed and published again, and the queue ignores the duplicate.
 * So the worst case is a duplicate, never a loss.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import { type FaultReader, isOn } from "../faults/mod.ts";
import type { Queue } from "../queue/publish.ts";
import type { TickResult } from "../wake/loop.ts";
import {
  type ClaimedRow,
  claimOutboxGuarded,
  failPublish,
  GUARD_LIMIT,
  markPublished,
  nextOutboxDue,
} from "./outbox_sql.ts";

/** How soon a relay that found every move slot taken looks again. */
const BUSY_RETRY_MS = 100;

/** Fault switches the relay obeys. */
export const RELAY_FAULTS = {
  /** The queue refuses the publish of this sandbox's messages. */
  queueRefusesSends: "queueRefusesSends",
  /** The relay "crashes" after publishing, before marking published. */
  crashBeforeMark: "crashBeforeMark",
} as const;

export interface RelayOptions {
  sql: Sql;
  /** The service whose outbox this relay drains. */
  service: string;
  queue: Queue;
  owner: string;
  log: Logger;
  faults: FaultReader;
  /** Delay before the next try after a failed publish (RELAY_RETRY_MS). */
  retryMs: number;
  /**
   * Rows per batch: 1,000 for a move (one statement of about 40 ms of
   * server time), 100 for a claim the long way.
   */
  batchSize?: number;
  /**
   * Moves run side by side while a backlog lasts (default 2, one per core
   * here): each is one server process busy with one statement, and SKIP
   * LOCKED keeps them on different rows. An idle relay runs one.
   */
  parallel?: number;
  leaseMs?: number;
  /** Automatic re-arms per sandbox and UTC day before the guard parks rows. */
  guardLimit?: number;
  /** Seconds from a message's creation to its publish, per published row. */
  observeLag?: (seconds: number, service: string) => void;
}

/**
 * One round for one service. A queue that can move rows itself (the
 * PostgreSQL transport, in the same database) moves a batch in one
 * transaction; the rows of sandboxes with a relay fault on, and every row
 * with another transport, go the long way: claim, publish, mark.
 */
export async function relayOnce(options: RelayOptions): Promise<TickResult> {
  const { queue, service } = options;
  if (!queue.moveFrom) return await claimPublishMark(options);
  const limit = options.batchSize ?? 1000;
  const move = async () => {
    const moved = await queue.moveFrom!(
      service,
      limit,
      Object.values(RELAY_FAULTS),
    );
    if (options.observeLag) {
      for (const lag of moved.lagSeconds) options.observeLag(lag, service);
    }
    return moved;
  };
  const first = await move();
  if (first.busy) {
    // Other relays hold every move slot of this outbox: they are draining
    // it. Look again shortly, in case they stop before it is empty.
    return {
      more: false,
      nextDueAt: new Date(Date.now() + BUSY_RETRY_MS),
      touched: [],
    };
  }
  const touched = new Set(first.sandboxIds);
  let faulted = first.faulted;
  // A full batch means a backlog: drain it with `parallel` moves side by
  // side, each going on by itself (no waiting for the slower one) until it
  // finds less than a batch or has moved ten; then back to the loop, which
  // comes straight back while there is more.
  let full = first.rows === limit;
  if (full) {
    full = false;
    await Promise.all(
      Array.from({ length: options.parallel ?? 2 }, async () => {
        for (let round = 0; round < 10; round++) {
          const b = await move();
          b.sandboxIds.forEach((id) => touched.add(id));
          faulted ||= b.faulted;
          if (b.rows < limit) return; // also when busy: another move has it
        }
        full = true;
      }),
    );
  }
  let slow: TickResult = { more: false };
  if (faulted) {
    slow = await claimPublishMark(options, Object.values(RELAY_FAULTS));
  } else if (first.rows === 0) {
    const next = await nextOutboxDue(options.sql, service);
    slow = { more: false, nextDueAt: next ?? undefined };
  }
  for (const id of slow.touched ?? []) touched.add(id);
  return {
    more: full || slow.more,
    nextDueAt: slow.nextDueAt,
    touched: [...touched],
  };
}

/** One claim-publish-mark round, for rows of `faulted` sandboxes only if set. */
async function claimPublishMark(
  options: RelayOptions,
  faulted?: readonly string[],
): Promise<TickResult> {
  const { sql, service, owner, log } = options;
  const batchSize = options.batchSize ?? 100;
  const { rows: claimed, parked } = await claimOutboxGuarded(sql, service, {
    owner,
    limit: batchSize,
    leaseMs: options.leaseMs ?? 30_000,
    faultNames: faulted,
    guardLimit: options.guardLimit,
  });
  alarmGuard(options, parked);
  if (claimed.length === 0) {
    const next = await nextOutboxDue(sql, service);
    return { more: false, nextDueAt: next ?? undefined };
  }
  const faults = await options.faults([
    ...new Set(claimed.map((r) => r.sandboxId)),
  ]);
  const refused: ClaimedRow[] = [];
  const sendable: ClaimedRow[] = [];
  for (const row of claimed) {
    (isOn(faults, row.sandboxId, RELAY_FAULTS.queueRefusesSends)
      ? refused
      : sendable)
      .push(row);
  }
  // After a failed publish, wake for the retry rather than wait for the poll
  // (rows parked by the guard are not due then, and simply stay).
  let nextDueAt: Date | undefined;
  if (refused.length > 0) {
    await fail(
      options,
      refused,
      "the queue refused the send (queueRefusesSends fault)",
    );
    nextDueAt = new Date(Date.now() + options.retryMs);
  }
  if (sendable.length > 0) {
    try {
      await options.queue.publish(
        sendable.map((row) => ({ source: service, envelope: row.envelope })),
      );
    } catch (error) {
      await fail(
        options,
        sendable,
        `publish failed: ${(error as Error).message}`,
      );
      return { more: false, nextDueAt: new Date(Date.now() + options.retryMs) };
    }
    const crashed = sendable.filter((r) =>
      isOn(faults, r.sandboxId, RELAY_FAULTS.crashBeforeMark)
    );
    if (crashed.length > 0) {
      log.warn("relay_crash_fault", { service, rows: crashed.length });
    }
    const toMark = sendable.filter((r) => !crashed.includes(r)).map((r) =>
      r.id
    );
    const marked = await markPublished(sql, service, owner, toMark);
    if (options.observeLag) {
      const now = Date.now();
      for (const row of sendable) {
        if (crashed.includes(row)) continue;
        options.observeLag(
          (now - Date.parse(row.envelope.occurredAt)) / 1000,
          service,
        );
      }
    }
    if (marked < toMark.length) {
      // Another relay took these rows over after our lease expired; it will
      // publish them again and the queue will ignore the repeat.
      log.warn("lease_lost", { service, owner, lost: toMark.length - marked });
    }
  }
  return {
    more: claimed.length === batchSize,
    nextDueAt,
    touched: [...new Set(claimed.map((r) => r.sandboxId))],
  };
}

async function fail(options: RelayOptions, rows: ClaimedRow[], error: string) {
  const { sql, service, owner, log } = options;
  log.warn("relay_error", { service, rows: rows.length, error });
  const parked = await failPublish(sql, service, owner, {
    ids: rows.map((r) => r.id),
    sandboxIds: rows.map((r) => r.sandboxId),
    error,
    retryMs: options.retryMs,
    guardLimit: options.guardLimit ?? GUARD_LIMIT,
  });
  alarmGuard(options, parked);
}

/** One alarm per sandbox whose rows the loop guard parked. */
function alarmGuard({ service, log }: RelayOptions, parked: string[]) {
  for (const sandboxId of parked) {
    log.error("alarm_guard", {
      service,
      sandboxId,
      message:
        "automatic re-arms for today are used up; rows wait for the next command or an operator",
    });
  }
}
