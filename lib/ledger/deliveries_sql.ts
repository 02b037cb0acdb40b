/**
 * Queries on queue.deliveries for the consumers: claim due deliveries with a
 * lease, and finish them in one statement, fenced by that lease.
 */
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import { asBookkeeper, bookkeepingStatement } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import {
  type AttemptResult,
  type ClaimedDelivery,
  claimLease,
} from "./delivery.ts";
import {
  type Closed,
  type HeldLanes,
  NOTHING_CLOSED,
  NOTHING_HELD,
} from "./lanes.ts";
import { inQueue } from "../db/names.ts";
import type { DeliveryState } from "./states.ts";
import { notWiping } from "../db/closed.ts";

/**
 * The claim and the finish are planned once per connection: their plans
 * (the open-deliveries index, then each row by its id) fit any batch.
 * Rows are picked with `= any(array(...))`, which the planner reads as a few
 * index lookups whatever the batch size, where a join to the picked rows
 * would be planned for a tenth of the table.
 */
const GENERIC = { genericPlans: true };

/** What one claim asks for. */
export interface ClaimOptions {
  limit: number;
  leaseMs: number;
  round: Round;
  /**
   * Only deliveries to these subscribers: a consumer claims what it can
   * send, and leaves deliveries to subscribers it does not serve to the
   * consumers that do. Without it, every subscriber's.
   */
  subscribers?: readonly string[];
  /** Called just before the claim goes to the server. */
  onSent?: () => void;
}

/** A claim, and when the next delivery is due if it found none. */
export interface ClaimBatch {
  claimed: ClaimedDelivery[];
  /** Only when nothing was claimed: the earliest waiting delivery's time. */
  nextDueAt: Date | null;
  /** The tenant the next claim's round starts after (see {@link Round}). */
  after?: string | null;
}

/**
 * What a claim must know to share the deliveries fairly between tenants:
 * where its round starts, how many deliveries of each tenant the claiming
 * process holds already, and what it may take no more of.
 */
export interface Round {
  /** The round starts with the first tenant after this one (wrapping). */
  after: string | null;
  /** Deliveries of one tenant that the process may hold at once. */
  perTenant: number;
  /**
   * Deliveries of one tenant to one subscriber (a lane) that the process
   * may hold at once; perTenant when absent.
   */
  perLane?: number;
  /** What the process holds, per tenant and subscriber; none when absent. */
  held?: HeldLanes;
  /**
   * Lanes whose deliveries wait: held in full, or paused (FairShare.closed,
   * ../pauses.ts). None when absent.
   */
  closed?: Closed;
}

/** Tenants one claim visits at the most (before the next round). */
const ROUND_TENANTS = 10;

/** Sorts before every real tenant id, for a round from the start. */
const NO_TENANT = "00000000-0000-0000-0000-000000000000";

interface ClaimRow {
  id: string | null;
  tenant_id: string;
  message_id: string;
  subscriber: string;
  type: string;
  aggregate_id: string;
  attempts: number;
  max_attempts: number | null;
  envelope: Envelope;
  next_due: Date | null;
  after: string | null;
}

/**
 * The claim, with the question an empty claim asks next (when is the
 * earliest waiting delivery due) in the same statement.
 *
 * Round-robin across tenants: `ring` walks the tenants that have open
 * deliveries, in id order from the one after `round.after` and wrapping,
 * each found by one lookup in the open deliveries' index (up to
 * ROUND_TENANTS of them). From each, the picks take one lane: the
 * subscriber of its oldest due delivery, oldest first, so that what a
 * tenant gives travels as one batch (one request, one receiver
 * transaction); where that lane runs out, the tenant's other lanes fill
 * its part. No pick takes more than the process may still hold of the
 * tenant, and none takes a lane of `round.closed` (held in full, or
 * paused: a lane that is always full); `due` takes the first of each
 * tenant, then the second of each, and so on. Each pick locks its rows
 * (FOR UPDATE SKIP LOCKED, a write each), so they are taken in two steps:
 * first an even part of the batch from each tenant, then, if the batch is
 * not full, the rest from those that gave their whole part. Ten tenants
 * with work lock about a batch's worth of rows, not ten batches. Rows a
 * pick locked but `due` left stay as they were. When nothing was claimed,
 * the next due time leaves out the tenants the process holds its share
 * of: their rows wait until it finishes some (and wakes its consumers), not
 * in a loop of empty claims. A process that holds its share of every
 * tenant, as it does under a backlog, asks this without reading the
 * backlog.
 */
function claimStatement(
  sql: TxSql,
  lease: string,
  { limit, leaseMs, round, subscribers }: ClaimOptions,
) {
  const open = sql`state in ('pending', 'in_flight')`;
  const closed = (round.closed ?? NOTHING_CLOSED).lanes;
  const held = round.held ?? NOTHING_HELD;
  const perLane = round.perLane ?? round.perTenant;
  const served = subscribers
    ? sql`and d.subscriber in ${sql(subscribers as string[])}`
    : sql``;
  // An open delivery `d` to a served subscriber, outside the closed lanes
  // and the tenants being wiped (their wipe deletes them).
  const waiting = sql`d.state in ('pending', 'in_flight') ${served}
    and ${notWiping(sql, "d.tenant_id")}
    and not exists (
      select from full_lanes f
       where f.tenant_id = d.tenant_id and f.subscriber = d.subscriber)`;
  // Of those, one of `tenant` that is due.
  const pickable = (tenant: ReturnType<typeof sql>) =>
    sql`d.tenant_id = ${tenant} and d.next_attempt_at <= now() and ${waiting}`;
  // When the earliest waiting delivery of the tenants `which` allows is due.
  const nextDue = (which: ReturnType<typeof sql>) =>
    sql`(select min(next_attempt_at) from ${sql(inQueue("deliveries"))} d
          where ${which} and ${waiting})`;
  const next = (after: ReturnType<typeof sql>) =>
    sql`coalesce(
      (select tenant_id from ${sql(inQueue("deliveries"))}
        where ${open} and tenant_id > ${after}
        order by tenant_id limit 1),
      (select tenant_id from ${sql(inQueue("deliveries"))}
        where ${open} order by tenant_id limit 1))`;
  return sql<ClaimRow[]>`
    with recursive ring (tenant_id, first, n) as (
      -- offset 0: the first tenant is looked up once, not once for each
      -- place that names it.
      select s, s, 1
        from (select ${
    next(sql`${round.after ?? NO_TENANT}::uuid`)
  } as s offset 0) x
       where s is not null
      union all
      select nx.s, r.first, r.n + 1
        -- offset 0: the next tenant is looked up once, not again in the
        -- condition below.
        from ring r, lateral (select ${next(sql`r.tenant_id`)} as s offset 0) nx
       where r.n < ${ROUND_TENANTS} and nx.s <> r.first
    ), held as (
      select * from unnest(${held.tenantIds}::uuid[],
                           ${held.subscribers}::text[],
                           ${held.counts}::int[])
        as h(tenant_id, subscriber, n)
    ), full_lanes as (
      select * from unnest(${closed.tenantIds}::uuid[],
                           ${closed.subscribers}::text[])
        as f(tenant_id, subscriber)
    ), totals as (
      select tenant_id, sum(n)::int as n from held group by tenant_id
    ), caps as (
      -- What each tenant of the round may give: its room in the share,
      -- and first an even part of the batch (a row locked is a write, so
      -- no more are locked than the batch could take).
      select r.tenant_id, r.n,
             greatest(0, least(${limit}, ${round.perTenant} - coalesce(t.n, 0))) as room,
             (${limit} + k.n - 1) / k.n as part
        from ring r
        left join totals t on t.tenant_id = r.tenant_id
        cross join (select count(*)::int as n from ring) k
    ), chosen as (
      -- Each tenant's oldest due delivery names the lane it gives this
      -- claim: its picks are of one subscriber, so that they travel as one
      -- batch (one request, one receiver transaction).
      select c.tenant_id, c.n, c.room, c.part, h.id, h.subscriber
        from caps c
        cross join lateral (
          select d.id, d.subscriber from ${sql(inQueue("deliveries"))} d
           where ${pickable(sql`c.tenant_id`)} and least(c.room, c.part) > 0
           order by d.id
           limit 1
           for update skip locked
        ) h
    ), heads as (
      -- What the lane may give: no more than the process may still hold of
      -- it (lane_room, at least 1: a lane held in full is closed), nor
      -- than the tenant's part (take).
      select x.*, least(x.lane_room, x.part) as take from (
        select ch.*,
               least(ch.room, ${perLane} - coalesce(hl.n, 0)) as lane_room
          from chosen ch
          left join held hl on hl.tenant_id = ch.tenant_id
                           and hl.subscriber = ch.subscriber
      ) x
    ), first_picks as (
      select h.tenant_id, h.id, 1::bigint as rank, h.n from heads h
      union all
      select h.tenant_id, p.id, 1 + p.rank, h.n
        from heads h
        cross join lateral (
          -- FOR UPDATE and a window function cannot share a query level.
          select q.id, row_number() over (order by q.id) as rank from (
            select d.id from ${sql(inQueue("deliveries"))} d
             where ${pickable(sql`h.tenant_id`)}
               and d.subscriber = h.subscriber and d.id > h.id
             order by d.id
             limit greatest(0, h.take - 1)
             for update skip locked
          ) q
        ) p
    ), short as (
      select ${limit} - count(*)::int as n from first_picks
    ), given as (
      select tenant_id, count(*)::int as taken, max(id) as last
        from first_picks group by tenant_id
    ), more_picks as (
      -- The batch not yet full: more of the same lane from the tenants
      -- whose lane gave all it was asked (it may have more) and may give
      -- more ...
      select p.id, g.taken + p.rank as rank, h.n
        from heads h
        join given g on g.tenant_id = h.tenant_id
                    and g.taken = h.take and g.taken < h.lane_room
        cross join short
        cross join lateral (
          select q.id, row_number() over (order by q.id) as rank from (
            select d.id from ${sql(inQueue("deliveries"))} d
             where ${pickable(sql`h.tenant_id`)}
               and d.subscriber = h.subscriber and d.id > g.last
             order by d.id
             limit greatest(0, least(h.lane_room - g.taken, short.n))
             for update skip locked
          ) q
        ) p
       where short.n > 0
      union all
      -- ... and from those whose lane ran out or is at its share, their
      -- part from other lanes, oldest first: a tenant with one delivery to
      -- each of six receivers gives all six to one claim, and a slow lane
      -- does not take a tenant's whole share.
      select p.id, g.taken + p.rank as rank, h.n
        from heads h
        join given g on g.tenant_id = h.tenant_id
                    and g.taken < least(h.room, h.part)
                    and not (g.taken = h.take and g.taken < h.lane_room)
        cross join short
        cross join lateral (
          select q.id, row_number() over (order by q.id) as rank from (
            select d.id from ${sql(inQueue("deliveries"))} d
             where ${pickable(sql`h.tenant_id`)}
               and d.subscriber <> h.subscriber
             order by d.id
             limit greatest(0, least(least(h.room, h.part) - g.taken, short.n))
             for update skip locked
          ) q
        ) p
       where short.n > 0
    ), picks as (
      select id, rank, n from first_picks
      union all
      select id, rank, n from more_picks
    ), due as (
      select id, n from picks order by rank, n limit ${limit}
    ), claimed as (
      update ${sql(inQueue("deliveries"))} d
         set state = 'in_flight',
             lease_owner = ${lease},
             lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
             next_attempt_at = now() + ${leaseMs} * interval '1 millisecond',
             attempts = d.attempts + 1
        from ${sql(inQueue("messages"))} m
       where d.id = any(array(select id from due))
         and m.message_id = d.message_id
      returning d.id, d.tenant_id, d.message_id, d.subscriber, d.type,
                d.aggregate_id, d.attempts, d.max_attempts, m.envelope
    ), after as (
      select tenant_id from ring
       where n = coalesce((select max(n) from due), (select max(n) from ring))
    )
    select c.*, null::timestamptz as next_due,
           (select tenant_id from after) as after
      from claimed c
    union all
    select null, null, null, null, null, null, null, null, null,
           case when (select count(*) from ring) < ${ROUND_TENANTS} then
             -- The round saw every tenant with open deliveries: only those
             -- the process may take more of are read, each through the
             -- index. Where it holds its share of all, nothing is read.
             ${
    nextDue(sql`d.tenant_id = any(array(
                 select tenant_id from caps where room > 0))`)
  }
           else ${
    nextDue(sql`not exists (
                 select from totals t where t.tenant_id = d.tenant_id
                    and t.n >= ${round.perTenant})`)
  }
           end,
           (select tenant_id from after)
     where not exists (select from claimed)`;
}

function toBatch(rows: ClaimRow[], lease: string): ClaimBatch {
  const claimed = rows.filter((r) => r.id !== null).map((r) => ({
    id: Number(r.id),
    tenantId: r.tenant_id,
    messageId: r.message_id,
    subscriber: r.subscriber,
    type: r.type,
    aggregateId: r.aggregate_id,
    attempt: r.attempts,
    maxAttempts: r.max_attempts,
    envelope: r.envelope,
    lease,
  })).sort((a, b) => a.id - b.id);
  return {
    claimed,
    nextDueAt: claimed.length === 0 ? rows[0]?.next_due ?? null : null,
    after: rows[0]?.after ?? null,
  };
}

/**
 * Claims up to `claim.limit` due deliveries, round-robin across tenants
 * and oldest first within each, skipping rows other consumers hold, and,
 * when it finds nothing, says when the next delivery is due: one statement,
 * so that an idle consumer's look costs one transaction, not two. The lease
 * expiry is also the next attempt time, so a delivery whose consumer died is
 * simply due again when the lease runs out. Each claim leases its rows under
 * a token of its own ({@link claimLease}), which its deliveries carry.
 * `onSent` is called just before the claim goes to the server: whatever
 * committed before that moment is seen by this claim (the consumers'
 * wake-ups rely on it).
 */
export async function claimBatch(
  sql: Sql,
  owner: string,
  claim: ClaimOptions,
): Promise<ClaimBatch> {
  const lease = claimLease(owner);
  return toBatch(
    await bookkeepingStatement(sql, "queue", ({ sql }) => {
      claim.onSent?.();
      return claimStatement(sql, lease, claim);
    }, GENERIC),
    lease,
  );
}

/**
 * Records a batch of attempts and moves each delivery on, in one statement
 * (a first-try success in the delivery's row alone).
 * A delivery changes only while it is still leased by the claim that made
 * its attempt (the result's `lease`): a consumer that lost its lease (it was
 * too slow, another claim took over, even one of the same process) changes
 * nothing. Returns how many deliveries were finished.
 */
export async function finishDeliveries(
  sql: Sql,
  results: AttemptResult[],
): Promise<number> {
  return (await finishDeliveryStates(sql, results)).size;
}

/**
 * {@link finishDeliveries}, returning the state each finished delivery
 * is left in, by id: a consumer that answers a broker for each delivery
 * answers only for those it still held (lib/carriers/jetstream/
 * consumer.ts), and acknowledges one that is held rather than asking for
 * a retry. With `durable`, the commit is on disk when this returns: such a
 * consumer acknowledges the broker next, which then forgets the message,
 * so a finish lost in a crash would leave the delivery open with nothing
 * left to send it. With `republish`, deliveries released from a hold are
 * marked to be published again, as a redrive's are.
 */
export async function finishDeliveryStates(
  sql: Sql,
  results: AttemptResult[],
  options: { durable?: boolean; republish?: boolean } = {},
): Promise<Map<number, DeliveryState>> {
  if (results.length === 0) return new Map();
  const finished = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) => finishStatement(sql, results, options.republish),
    { ...GENERIC, durableCommit: options.durable },
  );
  return new Map(finished.map((r) => [Number(r.delivery_id), r.state]));
}

/**
 * {@link finishDeliveries} and the next {@link claimBatch}, in one
 * transaction whose two statements go out together: a consumer with a
 * backlog pays one transaction per batch instead of two. The claim runs
 * after the finish, so it never takes back what this batch just finished.
 */
export async function finishAndClaim(
  sql: Sql,
  owner: string,
  results: AttemptResult[],
  claim: ClaimOptions,
): Promise<{ finished: number; next: ClaimBatch }> {
  const lease = claimLease(owner);
  return await asBookkeeper(sql, "queue", async ({ sql }) => {
    const finishing = results.length > 0
      ? finishStatement(sql, results)
      : Promise.resolve([]);
    claim.onSent?.();
    const [finished, claimed] = await Promise.all([
      finishing,
      claimStatement(sql, lease, claim),
    ]);
    return { finished: finished.length, next: toBatch(claimed, lease) };
  }, GENERIC);
}

function finishStatement(
  sql: TxSql,
  results: AttemptResult[],
  republish = false,
) {
  const deliveries = sql(inQueue("deliveries"));
  // A failure of a subscriber that keeps order waits behind the nearest
  // earlier delivery of its aggregate that is dead or held, or, when its
  // retries are over, behind one still open: it would die only because an
  // earlier message is not there yet. Looked for only then (the CASE), by
  // the aggregate's messages and each one's delivery to this subscriber;
  // any other result costs nothing more.
  const behind = sql`case when r.keep_order = 1 and r.state <> 'done' then (
      select e.id from ${sql(inQueue("messages"))} m
        join ${deliveries} e
          on e.message_id = m.message_id and e.subscriber = d.subscriber
       where m.aggregate_id = d.aggregate_id and m.tenant_id = d.tenant_id
         and m.message_id < d.message_id
         and (e.state in ('dead', 'held') or r.state = 'dead'
              and e.state in ('pending', 'in_flight'))
       order by m.message_id desc limit 1) end`;
  // The results are a FROM item of the update, not a CTE: each is then
  // one look-up by primary key. As a CTE scanned for each row, they cost
  // a comparison per pair, a fifth of the statement at a batch of 100.
  return sql`
    with u as (
      update ${deliveries} d
         set state = case when ${behind} is not null then 'held'
               else r.state end,
             held_behind = ${behind},
             lease_owner = null,
             lease_expires_at = null,
             next_attempt_at = case when r.state = 'pending'
               then now() + r.delay_ms * interval '1 millisecond'
               else d.next_attempt_at end,
             last_status = r.status,
             last_error = r.error,
             done_at = case when r.state = 'done' then now() end,
             -- The closure audit's order (lib/ledger/audit.ts).
             done_xid = case when r.state = 'done'
               then pg_current_xact_id() end,
             dead_at = case when r.state = 'dead' and ${behind} is null
               then now() else d.dead_at end,
             last_started_at = r.started_at,
             last_duration_ms = r.duration_ms
        from unnest(
          ${results.map((r) => r.id)}::bigint[],
          ${results.map((r) => r.lease)}::text[],
          ${results.map((r) => r.state)}::text[],
          ${results.map((r) => r.attempt)}::int[],
          ${results.map((r) => r.status)}::int[],
          ${results.map((r) => r.error)}::text[],
          ${results.map((r) => r.delayMs)}::int[],
          ${results.map((r) => r.startedAt.toISOString())}::timestamptz[],
          ${results.map((r) => r.durationMs)}::int[],
          -- 1 or 0: postgres.js sends no array of booleans.
          ${results.map((r) => r.keepOrder ? 1 : 0)}::int[])
          as r(id, lease, state, attempt, status, error, delay_ms,
               started_at, duration_ms, keep_order)
       where d.id = r.id and d.lease_owner = r.lease
         -- The state is a parameter so that the plan, made once per
         -- connection (GENERIC), cannot read the open deliveries' index:
         -- made while the queue was near empty, it scanned that whole
         -- index at every finish once a backlog had grown, where the
         -- primary key finds each row (bench/HISTORY.md).
         and d.state = ${"in_flight"}
         -- An attempt that ends after the tenant's wipe began records
         -- nothing: the wipe may have deleted the attempts already.
         and ${notWiping(sql, "d.tenant_id")}
      returning d.id, d.tenant_id, d.state, r.attempt, r.started_at,
                r.duration_ms, r.status, r.error
    ), attempted as (
      -- A success at the first attempt is told by the delivery's own row
      -- (last_started_at, last_duration_ms, last_status, done_at): it
      -- writes no attempt row. Every other attempt keeps one.
      insert into ${sql(inQueue("attempts"))}
        (tenant_id, delivery_id, attempt, started_at, duration_ms, status,
         outcome, error)
      select tenant_id, id, attempt, started_at, duration_ms, status,
             case state when 'pending' then 'retry' else state end, error
        from u
       where not (state = 'done' and attempt = 1)
    ), released as (
      ${releaseHeld(sql, sql`select id from u where state = 'done'`, republish)}
    )
    select id as delivery_id, state from u`;
}

/**
 * The statement that moves the deliveries held behind `blockers` (a
 * subquery of ids, done or refused now) back to pending, due at once;
 * over a carrier that keeps the messages (`republish`), published again
 * as a redrive is.
 */
export function releaseHeld(
  sql: TxSql,
  blockers: Fragment,
  republish: boolean,
) {
  return sql`
      update ${sql(inQueue("deliveries"))} h
         set state = 'pending', held_behind = null, next_attempt_at = now(),
             -- A limit of its own (a redrive's) grows to one try more: it
             -- may have run out while it waited.
             max_attempts = case when h.max_attempts is not null
               then greatest(h.max_attempts, h.attempts + 1) end,
             republish_at = case when ${republish} then now() end
       where h.state = 'held' and h.held_behind in (${blockers})
      returning h.id`;
}

/**
 * Moves the end of a claim's lease on delivery `id` to `leaseMs` from now,
 * in the caller's transaction (and so in its tenant's scope). A worker whose
 * sends can outlast the lease renews it while it works, so that only a
 * crash lets the lease run out. Returns false when the claim no longer holds
 * the delivery: it was finished, or another claim took it over.
 */
export async function renewLease(
  tx: TxSql,
  id: number,
  lease: string,
  leaseMs: number,
): Promise<boolean> {
  const renewed = await tx`
    update ${tx(inQueue("deliveries"))}
       set lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
           next_attempt_at = now() + ${leaseMs} * interval '1 millisecond'
     where id = ${id} and lease_owner = ${lease} and state = 'in_flight'`;
  return renewed.count === 1;
}
