/**
 * The relay: what a service owes goes from its outbox to the transport.
 *
 * Into the PostgreSQL queue, which shares the outboxes' database, due rows
 * are moved in one transaction (move.ts): deleted from the outbox with
 * their messages and deliveries stored, both or neither.
 *
 * To any other transport (JetStream), and for the rows of tenants with a
 * relay fault on, the long way:
 *
 * 1. Claim due rows (a lease, in the service's transaction, committed).
 * 2. Publish the batch (the transport ignores ids it already has).
 * 3. Delete the rows, owed no more, fenced by the lease (the transport's
 *    publish stored the message's durable copy in queue.messages).
 *
 * A crash between 2 and 3 leaves the rows claimed; when the lease expires
 * they are claimed and published again, and the transport ignores the
 * duplicate. So the worst case is a duplicate, never a loss.
 */
import {
  inSpan,
  linksTo,
  recordSpan,
  ROOT_CONTEXT,
  tracing,
} from "../trace/mod.ts";
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import {
  PartialPublish,
  type Queue,
  type Shortcut,
} from "../carriers/carrier.ts";
import type { TickResult } from "../wake/loop.ts";
import {
  type ClaimedRow,
  claimOutbox,
  failPublish,
  GUARD_LIMIT,
  markPublished,
  nextOutboxDue,
} from "../outbox/outbox_sql.ts";

/** How soon a relay that found every move slot taken looks again. */
const BUSY_RETRY_MS = 100;

export interface RelayOptions {
  sql: Sql;
  /** The service whose outbox this relay drains. */
  service: string;
  queue: Queue;
  /**
   * The transport shares the outboxes' database (the PostgreSQL queue):
   * move due rows into it in one transaction (lib/carriers/postgres/move.ts).
   */
  shortcut?: Shortcut;
  owner: string;
  log: Logger;
  /** Delay before the next try after a failed publish (RELAY_RETRY_MS). */
  retryMs: number;
  /**
   * Rows per batch: 1,000 for a move (one statement), 100 for a claim the
   * long way.
   */
  batchSize?: number;
  /**
   * Moves run side by side while a backlog lasts (default 2, one per core
   * here): each is one server process busy with one statement, and SKIP
   * LOCKED keeps them on different rows. An idle relay runs one.
   */
  parallel?: number;
  leaseMs?: number;
  /** Automatic re-arms per tenant and UTC day before the guard parks rows. */
  guardLimit?: number;
  /** Seconds from a message's creation to its publish, per published row. */
  observeLag?: (seconds: number, service: string) => void;
}

/**
 * One round for one service. With a shortcut (the PostgreSQL transport,
 * in the same database) a batch is moved in one transaction; the rows of
 * the tenants the queue diverts (a fault switch acts on them, see
 * lib/faults), and every row with another transport, go the long way:
 * claim, publish, mark.
 */
export async function relayOnce(options: RelayOptions): Promise<TickResult> {
  const { shortcut, service } = options;
  if (!shortcut) return await claimPublishMark(options);
  const limit = options.batchSize ?? 1000;
  const skip = options.queue.diverted?.query;
  const move = async () => {
    const startTime = Date.now();
    const moved = await shortcut.move(service, limit, { skip });
    if (tracing && moved.rows > 0) {
      recordSpan(`relay move ${service}`, {
        startTime,
        attributes: {
          "outbox.service": service,
          "messaging.batch.message_count": moved.rows,
        },
        links: linksTo(moved.traceparents),
      });
    }
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
  const touched = new Set(first.tenantIds);
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
          b.tenantIds.forEach((id) => touched.add(id));
          if (b.rows < limit) return; // also when busy: another move has it
        }
        full = true;
      }),
    );
  }
  let slow: TickResult = { more: false };
  // Read after the moves, not before: they need no list, and a late one
  // only sends a row to the long way at the relay's next round.
  const diverted = await options.queue.diverted?.list() ?? [];
  if (diverted.length > 0) {
    slow = await claimPublishMark(options, diverted);
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

/** One claim-publish-mark round, for rows of `only` these tenants if set. */
async function claimPublishMark(
  options: RelayOptions,
  only?: readonly string[],
): Promise<TickResult> {
  const { sql, service, owner, log } = options;
  const batchSize = options.batchSize ?? 100;
  const { rows: claimed, parked } = await claimOutbox(sql, service, {
    owner,
    limit: batchSize,
    leaseMs: options.leaseMs ?? 30_000,
    tenantIds: only,
    guardLimit: options.guardLimit,
  });
  alarmGuard(options, parked);
  if (claimed.length === 0) {
    const next = await nextOutboxDue(sql, service);
    return { more: false, nextDueAt: next ?? undefined };
  }
  const retryAt = () => new Date(Date.now() + options.retryMs);
  // A publish that fails for some messages only (PartialPublish) names
  // them: those are retried, and those it says not to mark stay claimed.
  let failed: ReadonlySet<string> = new Set();
  let unmarked: ReadonlySet<string> = new Set();
  let nextDueAt: Date | undefined;
  try {
    const publish = () =>
      options.queue.publish(
        claimed.map((row) => ({ source: service, envelope: row.envelope })),
      );
    await (!tracing ? publish() : inSpan(`relay publish ${service}`, {
      kind: "producer",
      parent: ROOT_CONTEXT,
      attributes: {
        "outbox.service": service,
        "messaging.batch.message_count": claimed.length,
      },
      links: linksTo(claimed.map((row) => row.envelope.traceparent)),
    }, publish));
  } catch (error) {
    if (!(error instanceof PartialPublish)) {
      await fail(
        options,
        claimed,
        `publish failed: ${(error as Error).message}`,
      );
      return { more: false, nextDueAt: retryAt() };
    }
    ({ failed, unmarked } = error);
    // After a failed publish, wake for the retry rather than wait for the
    // poll (rows parked by the guard are not due then, and simply stay).
    await fail(
      options,
      claimed.filter((r) => failed.has(r.envelope.messageId)),
      error.message,
    );
    if (failed.size > 0) nextDueAt = retryAt();
  }
  const sent = claimed.filter((r) =>
    !failed.has(r.envelope.messageId) && !unmarked.has(r.envelope.messageId)
  );
  const marked = await markPublished(
    sql,
    service,
    owner,
    sent.map((r) => r.envelope.messageId),
  );
  if (options.observeLag) {
    const now = Date.now();
    for (const row of sent) {
      options.observeLag(
        (now - Date.parse(row.envelope.occurredAt)) / 1000,
        service,
      );
    }
  }
  if (marked < sent.length) {
    // Another relay took these rows over after our lease expired; it will
    // publish them again and the queue will ignore the repeat.
    log.warn("lease_lost", { service, owner, lost: sent.length - marked });
  }
  return {
    more: claimed.length === batchSize,
    nextDueAt,
    touched: [...new Set(claimed.map((r) => r.tenantId))],
  };
}

async function fail(options: RelayOptions, rows: ClaimedRow[], error: string) {
  if (rows.length === 0) return;
  const { sql, service, owner, log } = options;
  log.warn("relay_error", { service, rows: rows.length, error });
  const parked = await failPublish(sql, service, owner, {
    messageIds: rows.map((r) => r.envelope.messageId),
    tenantIds: rows.map((r) => r.tenantId),
    error,
    retryMs: options.retryMs,
    guardLimit: options.guardLimit ?? GUARD_LIMIT,
  });
  alarmGuard(options, parked);
}

/** One alarm per tenant whose rows the loop guard parked. */
function alarmGuard({ service, log }: RelayOptions, parked: string[]) {
  for (const tenantId of parked) {
    log.error("alarm_guard", {
      service,
      tenantId,
      message:
        "automatic re-arms for today are used up; rows wait for the next command or an operator",
    });
  }
}
