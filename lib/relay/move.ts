/**
 * The relay's shortcut into the PostgreSQL queue. The queue lives in the
 * outboxes' database, so due rows are moved in one statement and one
 * transaction: deleted with their messages and deliveries stored,
 * or nothing happens (lib/relay/move_sql.ts). Rows another relay holds are
 * skipped; a row whose lease expired (a relay that claimed it the long way
 * and died) is due again and moved.
 */
import { tracing } from "../trace/mod.ts";
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import type { ClaimedDelivery } from "../queue/delivery.ts";
import type { PgQueue } from "../queue/postgres/queue.ts";
import { type Handoff, routesOf } from "../queue/postgres/store_sql.ts";
import { type MoveRow, moveStatement } from "./move_sql.ts";

export type { Handoff } from "../queue/postgres/store_sql.ts";
export { MOVE_SLOT_LOCK } from "./move_sql.ts";

/** What one move from an outbox into the queue did. */
export interface Moved {
  /** Outbox rows moved (and deleted). */
  rows: number;
  /** Of those, messages the queue did not have yet. */
  published: number;
  /** The tenants of the rows moved. */
  tenantIds: string[];
  /** Seconds from each row's creation to its publish. */
  lagSeconds: number[];
  /** The moved messages' trace contexts, where tracing is on (lib/trace). */
  traceparents: string[];
  /**
   * Other moves of this outbox held every slot (see PgMove's `slots`):
   * nothing was looked at, and rows may well be due.
   */
  busy: boolean;
  /**
   * The deliveries this move stored already claimed, for the consumer of
   * `MoveOptions.handoff`: the first, as many as it had room for (none
   * without one).
   */
  handed: ClaimedDelivery[];
  /**
   * A move that handed deliveries off also stored some pending: those past
   * the handoff's room, or of a lane or tenant its `closed` named. Its
   * NOTIFY skips this process, so the caller wakes a consumer of its own
   * for them.
   */
  leftPending: boolean;
}

export interface MoveOptions {
  /**
   * Tenants whose rows are left to the long way (claim, publish, mark):
   * those the queue diverts, where a decorator acts (lib/faults). A
   * subquery of tenant ids (`Diverted.query`), run in the move's own
   * snapshot: a switch turned on before a row was written is always seen,
   * where a list read before the move could be a moment old.
   */
  skip?: (sql: TxSql) => Fragment;
  /**
   * The process that wakes its own consumers after the move: the move's
   * NOTIFY names it, and that process's listener skips it.
   */
  wokenBy?: string;
  handoff?: Handoff;
}

/**
 * A transport that lives in the sender's database, as the relay sees it:
 * due outbox rows moved into the queue in one transaction of its own.
 */
export interface Shortcut {
  move(
    service: string,
    limit: number,
    options?: MoveOptions,
  ): Promise<Moved>;
}

/** A unique index refused a row (SQLSTATE 23505). */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === "23505";
}

/** The shortcut into a PgQueue. */
export class PgMove implements Shortcut {
  /**
   * At most `slots` moves from one outbox run at once, across every
   * process on this database (default 2, one per core here). Each move
   * takes a slot, a transaction-level advisory lock, or does nothing and
   * says it was busy. Two moves at once were the fastest (bench/HISTORY.md).
   */
  readonly slots: number;
  readonly sql: Sql;

  constructor(readonly queue: PgQueue, options: { slots?: number } = {}) {
    this.sql = queue.sql;
    this.slots = options.slots ?? 2;
    if (!Number.isInteger(this.slots) || this.slots < 1) {
      throw new RangeError(
        `slots must be a whole number >= 1 (got ${this.slots})`,
      );
    }
  }

  /**
   * Moves up to `limit` due rows of `service`'s outbox into the queue,
   * oldest first, in one statement and one transaction as the relay.
   */
  async move(
    service: string,
    limit: number,
    options: MoveOptions = {},
  ): Promise<Moved> {
    const statement = {
      service,
      limit,
      traces: tracing,
      slots: this.slots,
      routes: routesOf(this.queue.routing, Object.keys(this.queue.routing)),
      ...options,
    };
    // Without ON CONFLICT first: a message id the queue has already is rare
    // (a publish the long way whose mark was lost), and skipping repeats
    // costs every row a look in the unique index before its insert. When one
    // is there, the statement fails whole and goes again skipping repeats.
    let row: MoveRow;
    try {
      row = await moveStatement(this.sql, { ...statement, repeats: false });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      row = await moveStatement(this.sql, { ...statement, repeats: true });
    }
    return {
      rows: row.rows,
      published: row.published,
      tenantIds: row.tenant_ids ?? [],
      lagSeconds: row.lags ?? [],
      traceparents: row.traceparents ?? [],
      busy: row.busy,
      leftPending: options.handoff !== undefined && row.notified > 0,
      handed: (row.handed ?? []).map((h) => ({
        id: Number(h.id),
        tenantId: h.tenant_id,
        messageId: h.message_id,
        subscriber: h.subscriber,
        type: h.type,
        aggregateId: h.aggregate_id,
        attempt: 1,
        maxAttempts: null,
        envelope: h.envelope,
        lease: options.handoff!.owner,
      })),
    };
  }
}
