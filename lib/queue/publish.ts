/**
 * The queue's write side: store messages and fan each out into one delivery
 * per subscriber, in one statement. A message id the queue already has is
 * ignored, with its deliveries: publishing twice is harmless, which is what
 * lets the relay publish first and mark second.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import type { Fragment } from "../outbox/append.ts";
import { asBookkeeper, bookkeepingStatement } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import type { ClaimedDelivery } from "./deliveries_sql.ts";

/** Event type -> the subscribers that get it. */
export type Routing = Readonly<Record<string, readonly string[]>>;

export interface OutgoingMessage {
  /** The service whose outbox the message came from. */
  source: string;
  envelope: Envelope;
}

/** What one move from an outbox into the queue did. */
export interface Moved {
  /** Outbox rows marked published. */
  rows: number;
  /** Of those, messages the queue did not have yet. */
  published: number;
  /**
   * The rows moved, in outbox order: message id, type and aggregate, three
   * parallel lists. Only with `MoveOptions.listMoved`; empty otherwise.
   */
  messageIds: string[];
  types: string[];
  aggregateIds: string[];
  /** The sandboxes of the rows moved. */
  sandboxIds: string[];
  /** Seconds from each row's creation to its publish. */
  lagSeconds: number[];
  /** Whether some sandbox has a relay fault on (its rows were left). */
  faulted: boolean;
  /**
   * Other moves of this outbox held every slot (see PgQueue's `moveSlots`):
   * nothing was looked at, and rows may well be due.
   */
  busy: boolean;
  /**
   * The deliveries this move stored already claimed, for the consumer of
   * `MoveOptions.handoff` (empty without one, or when there were more).
   */
  handed: ClaimedDelivery[];
}

/**
 * The deliveries of a small move, stored already leased to a consumer of
 * the moving process, which sends them at once: no claim between the move
 * and the first attempt (one transaction less per hop of a message).
 */
export interface Handoff {
  /** The consumer's lease owner. */
  owner: string;
  leaseMs: number;
  /** Hand off only when the move makes at most this many deliveries. */
  max: number;
}

export interface MoveOptions {
  /**
   * The process that wakes its own consumers after the move: the move's
   * NOTIFY names it, and that process's listener skips it.
   */
  wokenBy?: string;
  handoff?: Handoff;
  /**
   * Return the moved rows' ids, types and aggregates (`Moved.messageIds`,
   * ...): for tracing. Three sorted lists of a batch's size, built and sent
   * for nothing otherwise.
   */
  listMoved?: boolean;
}

/** What any transport offers the relay. */
export interface Queue {
  /** Publishes a batch; returns how many messages were new to the queue. */
  publish(messages: OutgoingMessage[]): Promise<number>;
  /**
   * A transport that lives in the sender's database may move due outbox
   * rows into the queue in one transaction of its own, leaving out the
   * sandboxes that have one of `faultNames` on (the relay takes those the
   * long way, where the faults act). Without it, the relay claims,
   * publishes and marks.
   */
  moveFrom?(
    service: string,
    limit: number,
    faultNames: readonly string[],
    options?: MoveOptions,
  ): Promise<Moved>;
}

/**
 * The channel consumers LISTEN on. The payload is empty, or names the
 * process that has woken its own consumers already (see `moveFrom`).
 */
export const QUEUE_CHANNEL = "queue";

/** The routing as two parallel arrays (type, subscriber), for unnest. */
type Routes = [string[], string[]];

/**
 * The INSERT of the messages that `rows` yields (message_id, sandbox_id,
 * source, type, aggregate_id, envelope, position), in the order of
 * `position`. With `repeats`, a message id the queue has already is left as
 * it is; without, it fails the statement (cheaper when there are none).
 * Returns the ids it stored.
 */
function messagesOf(sql: TxSql, rows: Fragment, repeats: boolean): Fragment {
  return sql`
    insert into queue.messages
      (message_id, sandbox_id, source, type, aggregate_id, envelope)
    select s.message_id, s.sandbox_id, s.source, s.type, s.aggregate_id,
           s.envelope
      from (${rows}) s
     order by s.position
    ${repeats ? sql`on conflict (message_id) do nothing` : sql``}
    returning message_id`;
}

/**
 * The INSERT of one delivery per subscriber of each message that `rows`
 * yields (sandbox_id, message_id, type, aggregate_id, position), in the
 * order of `position` (the outbox's), not of message ids: two UUIDv7 of one
 * millisecond do not sort by time. With `repeats`, a delivery the queue has
 * already (its message was published before) is left as it is, so the
 * deliveries need not be joined to the messages the statement inserted (a
 * join of two CTE scans is planned as a nested loop: 1,000 x 1,000 rows, nine
 * tenths of a batch's time, measured); without, it fails the statement.
 */
function deliveriesOf(
  sql: TxSql,
  [routeTypes, routeSubs]: Routes,
  rows: Fragment,
  repeats: boolean,
  handoff?: Handoff,
): Fragment {
  const skipRepeats = repeats
    ? sql`on conflict (message_id, subscriber) do nothing`
    : sql``;
  if (!handoff) {
    return sql`
    insert into queue.deliveries
      (sandbox_id, message_id, subscriber, type, aggregate_id)
    select s.sandbox_id, s.message_id, r.subscriber, s.type, s.aggregate_id
      from (${rows}) s
      join unnest(${routeTypes}::text[], ${routeSubs}::text[])
        as r(type, subscriber) on r.type = s.type
     order by s.position, r.subscriber
    ${skipRepeats}`;
  }
  // All of them leased to the handoff's owner (as a claim would: first
  // attempt, the lease's end also the next attempt), or none.
  const lease = sql`now() + ${handoff.leaseMs} * interval '1 millisecond'`;
  return sql`
    insert into queue.deliveries
      (sandbox_id, message_id, subscriber, type, aggregate_id, state,
       lease_owner, lease_expires_at, next_attempt_at, attempts)
    select s.sandbox_id, s.message_id, s.subscriber, s.type, s.aggregate_id,
           case when s.n <= ${handoff.max} then 'in_flight' else 'pending' end,
           case when s.n <= ${handoff.max} then ${handoff.owner} end,
           case when s.n <= ${handoff.max} then ${lease} end,
           case when s.n <= ${handoff.max} then ${lease} else now() end,
           case when s.n <= ${handoff.max} then 1 else 0 end
      from (select s.*, r.subscriber, count(*) over () as n
              from (${rows}) s
              join unnest(${routeTypes}::text[], ${routeSubs}::text[])
                as r(type, subscriber) on r.type = s.type) s
     order by s.position, s.subscriber
    ${skipRepeats}
    returning id, sandbox_id, message_id, subscriber, type, aggregate_id,
              state`;
}

/**
 * `m` and `d`, two common table expressions (to follow `with` or a comma):
 * the messages and the deliveries of the rows that `rows` yields
 * (message_id, sandbox_id, source, type, aggregate_id, envelope, position).
 * `m` returns the ids of the messages it stored.
 */
function messagesAndDeliveries(
  sql: TxSql,
  routes: Routes,
  rows: Fragment,
  options: { repeats: boolean; handoff?: Handoff },
): Fragment {
  return sql`
    m as (${messagesOf(sql, rows, options.repeats)}),
    d as (${
    deliveriesOf(sql, routes, rows, options.repeats, options.handoff)
  })`;
}

/** A delivery a move handed off, as the statement returns it. */
interface HandedRow {
  id: number;
  sandbox_id: string;
  message_id: string;
  subscriber: string;
  type: string;
  aggregate_id: string;
  envelope: Envelope;
}

/** The move statement's one row. */
interface MoveRow {
  rows: number;
  published: number;
  message_ids: string[] | null;
  types: string[] | null;
  aggregate_ids: string[] | null;
  sandbox_ids: string[] | null;
  lags: number[] | null;
  notified: number;
  faulted: boolean;
  busy: boolean;
  handed: HandedRow[] | null;
}

/** A unique index refused a row (SQLSTATE 23505). */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === "23505";
}

/** The first key of the move slots' advisory locks (the second is the slot). */
export const MOVE_SLOT_LOCK = 0x6d6f7665; // "move"

/** The PostgreSQL transport: tables in the `queue` schema. */
export class PgQueue implements Queue {
  /**
   * At most `moveSlots` moves from one outbox run at once, across every
   * process on this database (default 2, one per core here). Each move
   * takes a slot, a transaction-level advisory lock, or does nothing and
   * says it was busy. Two relay processes with two side-by-side moves each
   * ran four moves at once, and drained a backlog a quarter slower than
   * one process (12,026 and 13,043 against 18,413 and 16,226 msg/s, bench
   * --only relay); two moves at once were the fastest.
   */
  readonly moveSlots: number;

  constructor(
    readonly sql: Sql,
    readonly routing: Routing,
    options: { moveSlots?: number } = {},
  ) {
    this.moveSlots = options.moveSlots ?? 2;
    if (!Number.isInteger(this.moveSlots) || this.moveSlots < 1) {
      throw new RangeError(`moveSlots must be a whole number >= 1`);
    }
  }

  /** The routes of `types`. */
  #routes(types: Iterable<string>): Routes {
    const routeTypes: string[] = [];
    const routeSubs: string[] = [];
    for (const type of types) {
      for (const subscriber of this.routing[type] ?? []) {
        routeTypes.push(type);
        routeSubs.push(subscriber);
      }
    }
    return [routeTypes, routeSubs];
  }

  async publish(messages: OutgoingMessage[]): Promise<number> {
    return await this.store(messages, { notify: true });
  }

  /**
   * Stores messages and their deliveries (pending), ignoring message ids the
   * queue has already; with `notify`, wakes the consumers that LISTEN. The
   * JetStream transport keeps its deliveries' rows with it, without waking
   * anyone: the broker carries the messages.
   */
  async store(
    messages: OutgoingMessage[],
    options: { notify: boolean },
  ): Promise<number> {
    if (messages.length === 0) return 0;
    const routes = this.#routes(new Set(messages.map((m) => m.envelope.type)));
    const e = messages.map((m) => m.envelope);
    return await asBookkeeper(this.sql, "queue", async ({ sql }) => {
      const [{ count }] = await sql<{ count: number }[]>`
        with x as (
          select x.source, x.e, x.n, (x.e->>'messageId')::uuid as message_id
            from unnest(
              ${messages.map((m) => m.source)}::text[],
              array(select v from jsonb_array_elements(${sql.json(e as never)})
                    with ordinality as t(v, n) order by n)
            ) with ordinality as x(source, e, n)
        ), ${
        messagesAndDeliveries(
          sql,
          routes,
          sql`
            select message_id, (e->>'sandboxId')::uuid as sandbox_id, source,
                   e->>'type' as type, e->>'aggregateId' as aggregate_id,
                   e as envelope, n as position
              from x`,
          { repeats: true },
        )
      }
        select count(*)::int as count from m`;
      if (count > 0 && options.notify) {
        await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
      }
      return count;
    });
  }

  /**
   * Moves up to `limit` due rows of `service`'s outbox into the queue, oldest
   * first, in one statement and one transaction as the relay: the rows are
   * marked published and their messages and deliveries stored together, or
   * nothing happens. Rows another relay holds are skipped; a row whose
   * lease expired (a relay that claimed it the long way and died) is due
   * again and moved. The envelope never leaves the database.
   */
  async moveFrom(
    service: string,
    limit: number,
    faultNames: readonly string[],
    options: MoveOptions = {},
  ): Promise<Moved> {
    // Without ON CONFLICT first: a message id the queue has already is rare
    // (a publish the long way whose mark was lost), and skipping repeats
    // costs every row a look in the unique index before its insert. When one
    // is there, the statement fails whole and goes again skipping repeats.
    let row: MoveRow;
    try {
      row = await this.#move(service, limit, faultNames, options, false);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      row = await this.#move(service, limit, faultNames, options, true);
    }
    return {
      rows: row.rows,
      published: row.published,
      messageIds: row.message_ids ?? [],
      types: row.types ?? [],
      aggregateIds: row.aggregate_ids ?? [],
      sandboxIds: row.sandbox_ids ?? [],
      lagSeconds: row.lags ?? [],
      faulted: row.faulted,
      busy: row.busy,
      handed: (row.handed ?? []).map((h) => ({
        id: Number(h.id),
        sandboxId: h.sandbox_id,
        messageId: h.message_id,
        subscriber: h.subscriber,
        type: h.type,
        aggregateId: h.aggregate_id,
        attempt: 1,
        maxAttempts: null,
        envelope: h.envelope,
      })),
    };
  }

  #move(
    service: string,
    limit: number,
    faultNames: readonly string[],
    options: MoveOptions,
    repeats: boolean,
  ): Promise<MoveRow> {
    const routes = this.#routes(Object.keys(this.routing));
    const { handoff } = options;
    // Planned once per connection, as the consumers' claim is (see
    // lib/queue/deliveries_sql.ts): the move alone went from 11,773 to
    // 13,900 msg/s (bench --only relay). One statement: its COMMIT goes
    // with it.
    return bookkeepingStatement(this.sql, "relay", ({ sql }) => {
      const table = sql(`${service}.outbox`);
      return sql<MoveRow[]>`
        with slot as materialized (
          select s from generate_series(0, ${this.moveSlots - 1}) as s
           where pg_try_advisory_xact_lock(${MOVE_SLOT_LOCK},
                   hashtext(${service}) # s)
           limit 1
        ), faulted as materialized (
          select coalesce(array_agg(distinct sandbox_id), '{}') as ids
            from platform.faults
           where enabled and name = any(${faultNames as string[]}::text[])
        ), due as (
          select o.id from ${table} o
           where o.state <> 'published' and o.next_attempt_at <= now()
             and o.sandbox_id <> all((select ids from faulted)::uuid[])
             and exists (select from slot)
           order by o.id
           limit ${limit}
           for update skip locked
        ), moved as (
          update ${table} o
             set state = 'published', published_at = now(),
                 lease_owner = null, lease_expires_at = null
           where o.id = any(array(select id from due))
          returning o.id, o.sandbox_id, o.message_id, o.type, o.envelope,
                    o.created_at
        ), ${
        messagesAndDeliveries(
          sql,
          routes,
          sql`
            select message_id, sandbox_id, ${service}::text as source, type,
                   envelope->>'aggregateId' as aggregate_id, envelope,
                   id as position
              from moved`,
          { repeats, handoff },
        )
      }, woken as (
          select pg_notify(${QUEUE_CHANNEL}, ${options.wokenBy ?? ""})
            from (${
        handoff
          // Handed-off deliveries are nobody else's business.
          ? sql`select 1 from d where d.state = 'pending' limit 1`
          : sql`select 1 from m limit 1`
      }) x
        )
        select (select count(*)::int from moved) as rows,
               (select count(*)::int from m) as published,
               ${
        options.listMoved
          ? sql`(select array_agg(message_id order by id) from moved) as message_ids,
               (select array_agg(type order by id) from moved) as types,
               (select array_agg(envelope->>'aggregateId' order by id)
                  from moved) as aggregate_ids,`
          : sql`null::uuid[] as message_ids, null::text[] as types,
               null::text[] as aggregate_ids,`
      }
               (select array_agg(distinct sandbox_id) from moved) as sandbox_ids,
               (select array_agg(date_part('epoch', now() - created_at))
                  from moved) as lags,
               (select count(*)::int from woken) as notified,
               (select cardinality(ids) > 0 from faulted) as faulted,
               not exists (select from slot) as busy,
               ${
        handoff
          ? sql`(select json_agg(json_build_object(
                   'id', d.id, 'sandbox_id', d.sandbox_id,
                   'message_id', d.message_id, 'subscriber', d.subscriber,
                   'type', d.type, 'aggregate_id', d.aggregate_id,
                   'envelope', mv.envelope) order by d.id)
                  from d join moved mv on mv.message_id = d.message_id
                 where d.state = 'in_flight')`
          : sql`null::json`
      } as handed`;
    }, { genericPlans: true }).then(([row]) => row);
  }
}
