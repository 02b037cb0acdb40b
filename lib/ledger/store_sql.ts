/**
 * The PostgreSQL queue's write side, as statement parts: store messages and
 * fan each out into one delivery per subscriber. Ledger's `store` inserts
 * what a publish gives it; the relay's move (lib/carriers/postgres/move_sql.ts) inserts,
 * in the same statement, the outbox rows it marks published.
 */
import type { Fragment, TxSql } from "../db/connect.ts";
import {
  type Closed,
  type HeldLanes,
  NOTHING_CLOSED,
  NOTHING_HELD,
} from "./lanes.ts";
import type { Routing } from "./queue.ts";
import { inQueue } from "../db/names.ts";

/** The routing as two parallel arrays (type, subscriber), for unnest. */
export type Routes = [string[], string[]];

/** The routes of `types`. */
export function routesOf(routing: Routing, types: Iterable<string>): Routes {
  const routeTypes: string[] = [];
  const routeSubs: string[] = [];
  for (const type of types) {
    for (const subscriber of routing[type] ?? []) {
      routeTypes.push(type);
      routeSubs.push(subscriber);
    }
  }
  return [routeTypes, routeSubs];
}

/**
 * The deliveries of a move, stored already leased to a consumer of
 * the moving process, which sends them at once: no claim between the move
 * and the first attempt (one transaction less per hop of a message).
 */
export interface Handoff {
  /** The lease the deliveries are handed off under (a claim's token). */
  owner: string;
  leaseMs: number;
  /** Deliveries one move hands off at most: the first, in its order. */
  max: number;
  /**
   * What the process may take no more of (FairShare.closed: lanes held in
   * full or paused, tenants held in full): their deliveries are stored
   * pending, for a claim to take once there is room, or the pair resumed.
   */
  closed?: Closed;
  /**
   * The process's share as the move starts: each tenant and lane is handed
   * off only what fits beside what it holds (a claim's caps, see `Round`
   * in deliveries_sql.ts). Without it, only `max` bounds the handoff.
   */
  room?: { perTenant: number; perLane: number; held: HeldLanes };
}

/**
 * The INSERT of the messages that `rows` yields (message_id, tenant_id,
 * source, type, aggregate_id, envelope, position), in the order of
 * `position`. With `repeats`, a message id the queue has already is left as
 * it is; without, it fails the statement (cheaper when there are none).
 * Returns the ids it stored.
 */
function messagesOf(sql: TxSql, rows: Fragment, repeats: boolean): Fragment {
  return sql`
    insert into ${sql(inQueue("messages"))}
      (message_id, tenant_id, source, type, aggregate_id, envelope)
    select s.message_id, s.tenant_id, s.source, s.type, s.aggregate_id,
           s.envelope
      from (${rows}) s
     order by s.position
    ${repeats ? sql`on conflict (message_id) do nothing` : sql``}
    returning message_id`;
}

/**
 * The INSERT of one delivery per subscriber of each message that `rows`
 * yields (tenant_id, message_id, type, aggregate_id, position), in the
 * order of `position` (the outbox's), not of message ids: two UUIDv7 of one
 * millisecond do not sort by time. With `repeats`, a delivery the queue has
 * already (its message was published before) is left as it is, so the
 * deliveries need not be joined to the messages the statement inserted (a
 * join of two CTE scans is planned as a nested loop of 1,000 x 1,000 rows,
 * most of a batch's time: bench/HISTORY.md); without, it fails the
 * statement.
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
    insert into ${sql(inQueue("deliveries"))}
      (tenant_id, message_id, subscriber, type, aggregate_id)
    select s.tenant_id, s.message_id, r.subscriber, s.type, s.aggregate_id
      from (${rows}) s
      join unnest(${routeTypes}::text[], ${routeSubs}::text[])
        as r(type, subscriber) on r.type = s.type
     order by s.position, r.subscriber
    ${skipRepeats}`;
  }
  // The first deliveries of the move, in its order, leased to the
  // handoff's owner (as a claim would: first attempt, the lease's end also
  // the next attempt), up to `max` and to what each lane and tenant has
  // room for; the rest, and those of a closed lane or tenant, are stored
  // pending, to wait for a claim or for the resume. Each cut takes a prefix
  // of every lane's deliveries in the move's order, so what is handed off
  // of one aggregate to one subscriber comes before what waits.
  const lease = sql`now() + ${handoff.leaseMs} * interval '1 millisecond'`;
  const closed = handoff.closed ?? NOTHING_CLOSED;
  const room = handoff.room ??
    { perTenant: handoff.max, perLane: handoff.max, held: NOTHING_HELD };
  const held = sql`unnest(${room.held.tenantIds}::uuid[],
    ${room.held.subscribers}::text[], ${room.held.counts}::int[])
    as h(tenant_id, subscriber, n)`;
  // Three cuts, each over what the one before let through: a lane's room,
  // then its tenant's, then `max`.
  const laneOk =
    sql`not s.closed and s.lane_n + s.lane_held <= ${room.perLane}`;
  const tenantOk =
    sql`(${laneOk}) and s.tenant_n + s.tenant_held <= ${room.perTenant}`;
  const hand = sql`s.handed`;
  return sql`
    insert into ${sql(inQueue("deliveries"))}
      (tenant_id, message_id, subscriber, type, aggregate_id, state,
       lease_owner, lease_expires_at, next_attempt_at, attempts)
    select s.tenant_id, s.message_id, s.subscriber, s.type, s.aggregate_id,
           case when ${hand} then 'in_flight' else 'pending' end,
           case when ${hand} then ${handoff.owner} end,
           case when ${hand} then ${lease} end,
           case when ${hand} then ${lease} else now() end,
           case when ${hand} then 1 else 0 end
      from (select s.*, (${tenantOk}) and count(*) filter (where ${tenantOk})
                          over (order by s.position, s.subscriber)
                          <= ${handoff.max} as handed
              from (select s.*, count(*) filter (where ${laneOk})
                                  over (partition by s.tenant_id
                                        order by s.position, s.subscriber)
                                  as tenant_n
                      from (select s.*, r.subscriber,
                                   row_number() over (
                                     partition by s.tenant_id, r.subscriber
                                     order by s.position) as lane_n,
                                   coalesce((select sum(h.n) from ${held}
                                              where h.tenant_id = s.tenant_id
                                                and h.subscriber = r.subscriber),
                                            0) as lane_held,
                                   coalesce((select sum(h.n) from ${held}
                                              where h.tenant_id = s.tenant_id),
                                            0) as tenant_held,
                                   (s.tenant_id = any(${closed.tenantIds}::uuid[])
                                    or exists (
                                      select from unnest(
                                        ${closed.lanes.tenantIds}::uuid[],
                                        ${closed.lanes.subscribers}::text[])
                                        as c(tenant_id, subscriber)
                                       where c.tenant_id = s.tenant_id
                                         and c.subscriber = r.subscriber))
                                     as closed
                              from (${rows}) s
                              join unnest(${routeTypes}::text[],
                                          ${routeSubs}::text[])
                                as r(type, subscriber) on r.type = s.type) s
                   ) s
           ) s
     order by s.position, s.subscriber
    ${skipRepeats}
    returning id, tenant_id, message_id, subscriber, type, aggregate_id,
              state`;
}

/**
 * `m` and `d`, two common table expressions (to follow `with` or a comma):
 * the messages and the deliveries of the rows that `rows` yields
 * (message_id, tenant_id, source, type, aggregate_id, envelope, position).
 * `m` returns the ids of the messages it stored.
 */
export function messagesAndDeliveries(
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
