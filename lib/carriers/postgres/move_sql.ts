/**
 * The relay's one-transaction move into the PostgreSQL queue, as one
 * statement: due outbox rows are deleted, and their messages and
 * deliveries stored (lib/ledger/store_sql.ts), together or not at
 * all. The envelope never leaves the database.
 */
import type { Fragment, Sql, TxSql } from "../../db/connect.ts";
import { bookkeepingStatement } from "../../db/service.ts";
import { dueOrOwed } from "../../outbox/outbox_sql.ts";
import type { Envelope } from "../../outbox/envelope.ts";
import { QUEUE_CHANNEL } from "../../ledger/channel.ts";
import {
  type Handoff,
  messagesAndDeliveries,
  type Routes,
} from "../../ledger/store_sql.ts";
import { notWiping } from "../../db/closed.ts";

/** The first key of the move slots' advisory locks (the second is the slot). */
export const MOVE_SLOT_LOCK = 0x6d6f7665; // "move"

/** A delivery a move handed off, as the statement returns it. */
export interface HandedRow {
  id: number;
  tenant_id: string;
  message_id: string;
  subscriber: string;
  type: string;
  aggregate_id: string;
  envelope: Envelope;
}

/** The move statement's one row. */
export interface MoveRow {
  rows: number;
  published: number;
  tenant_ids: string[] | null;
  lags: number[] | null;
  traceparents: string[] | null;
  notified: number;
  busy: boolean;
  handed: HandedRow[] | null;
}

/** What one run of the move statement is asked to do. */
export interface MoveStatement {
  service: string;
  limit: number;
  /** Move slots of this outbox (see PgMove's `slots`). */
  slots: number;
  routes: Routes;
  /** Tenants whose rows are left to the long way, as a subquery. */
  skip?: (sql: TxSql) => Fragment;
  /** Skip message ids the queue has already (slower; see PgMove). */
  repeats: boolean;
  /** Return the moved messages' trace contexts (tracing is on). */
  traces?: boolean;
  wokenBy?: string;
  handoff?: Handoff;
}

/**
 * Runs the move. Planned once per connection, as the consumers' claim is
 * (see lib/ledger/deliveries_sql.ts). One statement: its COMMIT
 * goes with it.
 */
export function moveStatement(sql: Sql, m: MoveStatement): Promise<MoveRow> {
  const { service, limit, handoff, repeats } = m;
  return bookkeepingStatement(sql, "relay", ({ sql }) => {
    const table = sql(`${service}.outbox`);
    const skip = m.skip
      ? sql`and o.tenant_id <> all(array(${m.skip(sql)}))`
      : sql``;
    return sql<MoveRow[]>`
        with slot as materialized (
          select s from generate_series(0, ${m.slots - 1}) as s
           where pg_try_advisory_xact_lock(${MOVE_SLOT_LOCK},
                   hashtext(${service}) # s)
           limit 1
        ), due as (
          -- Not the rows of a tenant being wiped: its wipe deletes them,
          -- and stored in the queue they would outlive it.
          select o.message_id, o.id from ${table} o
           where ${dueOrOwed(sql, service)}
             ${skip}
             and ${notWiping(sql, "o.tenant_id")}
             and exists (select from slot)
           order by o.id
           limit ${limit}
           for update skip locked
        ), moved as (
          -- Owed no more: the queue's copy is stored in this statement.
          delete from ${table} o
           where o.message_id = any(array(select message_id from due))
          returning o.id, o.tenant_id, o.message_id, o.type, o.envelope,
                    o.created_at
        ), ${
      messagesAndDeliveries(
        sql,
        m.routes,
        sql`
            select message_id, tenant_id, ${service}::text as source, type,
                   envelope->>'aggregateId' as aggregate_id, envelope,
                   id as position
              from moved`,
        { repeats, handoff },
      )
    }, woken as (
          select pg_notify(${QUEUE_CHANNEL}, ${m.wokenBy ?? ""})
            from (${
      handoff
        // Handed-off deliveries are nobody else's business.
        ? sql`select 1 from d where d.state = 'pending' limit 1`
        : sql`select 1 from m limit 1`
    }) x
        )
        select (select count(*)::int from moved) as rows,
               (select count(*)::int from m) as published,
               (select array_agg(distinct tenant_id) from moved) as tenant_ids,
               (select array_agg(date_part('epoch', now() - created_at))
                  from moved) as lags,
               ${
      m.traces
        ? sql`(select array_agg(envelope->>'traceparent') from moved
                 where envelope ? 'traceparent')`
        : sql`null::text[]`
    } as traceparents,
               (select count(*)::int from woken) as notified,
               not exists (select from slot) as busy,
               ${
      handoff
        ? sql`(select json_agg(json_build_object(
                   'id', d.id, 'tenant_id', d.tenant_id,
                   'message_id', d.message_id, 'subscriber', d.subscriber,
                   'type', d.type, 'aggregate_id', d.aggregate_id,
                   'envelope', mv.envelope) order by d.id)
                  from d join moved mv on mv.message_id = d.message_id
                 where d.state = 'in_flight')`
        : sql`null::json`
    } as handed`;
  }, { genericPlans: true }).then(([row]) => row);
}
