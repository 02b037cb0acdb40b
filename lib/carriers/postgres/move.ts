/**
 * The relay's shortcut into the PostgreSQL queue. The queue lives in the
 * outboxes' database, so due rows are moved in one statement and one
 * transaction: deleted with their messages and deliveries stored,
 * or nothing happens (lib/carriers/postgres/move_sql.ts). Rows another relay holds are
 * skipped; a row whose lease expired (a relay that claimed it the long way
 * and died) is due again and moved.
 */
import { tracing } from "../../trace/mod.ts";
import type { Sql } from "../../db/connect.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import { routesOf } from "../../ledger/store_sql.ts";
import { type MoveRow, moveStatement } from "./move_sql.ts";
import type { Moved, MoveOptions, Shortcut } from "../carrier.ts";

export { MOVE_SLOT_LOCK } from "./move_sql.ts";

/** A unique index refused a row (SQLSTATE 23505). */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === "23505";
}

/** The shortcut into a Ledger. */
export class PgMove implements Shortcut {
  /**
   * At most `slots` moves from one outbox run at once, across every
   * process on this database (default 2, one per core here). Each move
   * takes a slot, a transaction-level advisory lock, or does nothing and
   * says it was busy. Two moves at once were the fastest (bench/HISTORY.md).
   */
  readonly slots: number;
  readonly sql: Sql;

  constructor(readonly queue: Ledger, options: { slots?: number } = {}) {
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
