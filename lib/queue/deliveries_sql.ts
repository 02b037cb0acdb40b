/**
 * Queries on queue.deliveries for the consumers: claim due deliveries with a
 * lease, and finish them in one statement, fenced by that lease.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asBookkeeper, bookkeepingStatement } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";

export interface ClaimedDelivery {
  id: number;
  sandboxId: string;
  messageId: string;
  subscriber: string;
  type: string;
  aggregateId: string;
  /** This attempt's number, counting from 1. */
  attempt: number;
  maxAttempts: number | null;
  envelope: Envelope;
}

/**
 * The claim and the finish are planned once per connection: their plans
 * (the open-deliveries index, then each row by its id) fit any batch.
 * Rows are picked with `= any(array(...))`, which the planner reads as a few
 * index lookups whatever the batch size, where a join to the picked rows
 * would be planned for a tenth of the table.
 */
const GENERIC = { genericPlans: true };

/**
 * Claims up to `limit` due deliveries, oldest first, skipping rows other
 * consumers hold. The lease expiry is also the next attempt time, so a
 * delivery whose consumer died is simply due again when the lease runs out.
 */
export async function claimDeliveries(
  sql: Sql,
  owner: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  return (await claimBatch(sql, owner, limit, leaseMs)).claimed;
}

/** A claim, and when the next delivery is due if it found none. */
export interface ClaimBatch {
  claimed: ClaimedDelivery[];
  /** Only when nothing was claimed: the earliest waiting delivery's time. */
  nextDueAt: Date | null;
}

interface ClaimRow {
  id: string | null;
  sandbox_id: string;
  message_id: string;
  subscriber: string;
  type: string;
  aggregate_id: string;
  attempts: number;
  max_attempts: number | null;
  envelope: Envelope;
  next_due: Date | null;
}

/**
 * The claim, with the question an empty claim asks next (when is the
 * earliest waiting delivery due) in the same statement.
 */
function claimStatement(
  sql: TxSql,
  owner: string,
  limit: number,
  leaseMs: number,
) {
  return sql<ClaimRow[]>`
    with due as (
      select id from queue.deliveries
       where state in ('pending', 'in_flight') and next_attempt_at <= now()
       order by id
       limit ${limit}
       for update skip locked
    ), claimed as (
      update queue.deliveries d
         set state = 'in_flight',
             lease_owner = ${owner},
             lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
             next_attempt_at = now() + ${leaseMs} * interval '1 millisecond',
             attempts = d.attempts + 1
        from queue.messages m
       where d.id = any(array(select id from due))
         and m.message_id = d.message_id
      returning d.id, d.sandbox_id, d.message_id, d.subscriber, d.type,
                d.aggregate_id, d.attempts, d.max_attempts, m.envelope
    )
    select c.*, null::timestamptz as next_due from claimed c
    union all
    select null, null, null, null, null, null, null, null, null,
           (select min(next_attempt_at) from queue.deliveries
             where state in ('pending', 'in_flight'))
     where not exists (select from claimed)`;
}

function toBatch(rows: ClaimRow[]): ClaimBatch {
  const claimed = rows.filter((r) => r.id !== null).map((r) => ({
    id: Number(r.id),
    sandboxId: r.sandbox_id,
    messageId: r.message_id,
    subscriber: r.subscriber,
    type: r.type,
    aggregateId: r.aggregate_id,
    attempt: r.attempts,
    maxAttempts: r.max_attempts,
    envelope: r.envelope,
  })).sort((a, b) => a.id - b.id);
  return {
    claimed,
    nextDueAt: claimed.length === 0 ? rows[0]?.next_due ?? null : null,
  };
}

/**
 * {@link claimDeliveries} and, when it finds nothing, when the next delivery
 * is due: one statement, so that an idle consumer's look costs one
 * transaction, not two. `onSent` is called just before the claim goes to the
 * server: whatever committed before that moment is seen by this claim (the
 * consumers' wake-ups rely on it).
 */
export async function claimBatch(
  sql: Sql,
  owner: string,
  limit: number,
  leaseMs: number,
  onSent?: () => void,
): Promise<ClaimBatch> {
  return toBatch(
    await bookkeepingStatement(sql, "queue", ({ sql }) => {
      onSent?.();
      return claimStatement(sql, owner, limit, leaseMs);
    }, GENERIC),
  );
}

/** What became of one attempt. */
export interface AttemptResult {
  id: number;
  /** The delivery's next state: done, pending (retry later) or dead. */
  state: "done" | "pending" | "dead";
  attempt: number;
  status: number | null;
  error: string | null;
  /** For `pending`: how long until the next attempt. */
  delayMs: number;
  startedAt: Date;
  durationMs: number;
}

/**
 * Records a batch of attempts and moves each delivery on, in one statement.
 * Only deliveries still leased by `owner` change: a consumer that lost its
 * lease (it was too slow, another took over) changes nothing. Returns how
 * many deliveries were finished.
 */
export async function finishDeliveries(
  sql: Sql,
  owner: string,
  results: AttemptResult[],
): Promise<number> {
  if (results.length === 0) return 0;
  const finished = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) => finishStatement(sql, owner, results),
    GENERIC,
  );
  return finished.length;
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
  claim: { limit: number; leaseMs: number; onSent?: () => void },
): Promise<{ finished: number; next: ClaimBatch }> {
  return await asBookkeeper(sql, "queue", async ({ sql }) => {
    const finishing = results.length > 0
      ? finishStatement(sql, owner, results)
      : Promise.resolve([]);
    claim.onSent?.();
    const [finished, claimed] = await Promise.all([
      finishing,
      claimStatement(sql, owner, claim.limit, claim.leaseMs),
    ]);
    return { finished: finished.length, next: toBatch(claimed) };
  }, GENERIC);
}

function finishStatement(sql: TxSql, owner: string, results: AttemptResult[]) {
  return sql`
    with r as (
      select * from unnest(
        ${results.map((r) => r.id)}::bigint[],
        ${results.map((r) => r.state)}::text[],
        ${results.map((r) => r.attempt)}::int[],
        ${results.map((r) => r.status)}::int[],
        ${results.map((r) => r.error)}::text[],
        ${results.map((r) => r.delayMs)}::int[],
        ${results.map((r) => r.startedAt.toISOString())}::timestamptz[],
        ${results.map((r) => r.durationMs)}::int[])
        as r(id, state, attempt, status, error, delay_ms, started_at, duration_ms)
    ), u as (
      update queue.deliveries d
         set state = r.state,
             lease_owner = null,
             lease_expires_at = null,
             next_attempt_at = case when r.state = 'pending'
               then now() + r.delay_ms * interval '1 millisecond'
               else d.next_attempt_at end,
             last_status = r.status,
             last_error = r.error,
             done_at = case when r.state = 'done' then now() end,
             dead_at = case when r.state = 'dead' then now() else d.dead_at end
        from r
       where d.id = r.id and d.lease_owner = ${owner} and d.state = 'in_flight'
         and d.id = any(${results.map((r) => r.id)}::bigint[])
      returning d.id, d.sandbox_id
    )
    insert into queue.attempts
      (sandbox_id, delivery_id, attempt, started_at, duration_ms, status, outcome, error)
    select u.sandbox_id, r.id, r.attempt, r.started_at, r.duration_ms, r.status,
           case r.state when 'pending' then 'retry' else r.state end, r.error
      from u join r on r.id = u.id
    returning delivery_id`;
}

/** When the earliest waiting delivery becomes due (null when none waits). */
export async function nextDeliveryDue(sql: Sql): Promise<Date | null> {
  const [row] = await asBookkeeper(
    sql,
    "queue",
    ({ sql }) =>
      sql<{ at: Date | null }[]>`
      select min(next_attempt_at) as at from queue.deliveries
       where state in ('pending', 'in_flight')`,
  );
  return row.at;
}
