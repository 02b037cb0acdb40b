/**
 * What a redrive depends on, and what became of it. A receiver applies an
 * aggregate's messages in the order they were written (an OrderPaid needs
 * the card its OrderPlaced made), so a redrive that leaves an earlier dead
 * letter of the same aggregate and subscriber behind sends messages that
 * are refused "not yet" (409) and, having one attempt, die again at once.
 * {@link earlierDeadLetters} names those for a dry run; the caller may add
 * them to the redrive. {@link redriveOutcome} follows redriven deliveries:
 * applied, still retrying, or dead again with the receiver's answer.
 *
 * A message's place in its aggregate is the envelope's `aggregateVersion`,
 * then the delivery id (the order the relay stored them in), so a copy
 * that supersedes a message keeps its place.
 */
import type { TxSql } from "../db/connect.ts";
import { inQueue } from "../db/names.ts";

/** The aggregate version of message `m`, the first key of its place. */
const version = (sql: TxSql, m: string) =>
  sql`coalesce((${sql(m)}.envelope->>'aggregateVersion')::int, 0)`;

/** A dead letter that selected dead letters wait on. */
export interface EarlierDeadLetter {
  id: number;
  messageId: string;
  eventType: string;
  subscriber: string;
  aggregateId: string;
  lastError: string | null;
  deadAt: string;
  /** The selected dead letters written after it: they wait on it. */
  before: number[];
}

/**
 * The dead letters, not among `ids`, that come before one of `ids` in its
 * aggregate and go to the same subscriber: what the selection waits on.
 * Oldest first in each aggregate. In the caller's queue transaction.
 */
export async function earlierDeadLetters(
  sql: TxSql,
  ids: readonly number[],
): Promise<EarlierDeadLetter[]> {
  if (ids.length === 0) return [];
  const deliveries = sql(inQueue("deliveries"));
  const messages = sql(inQueue("messages"));
  const rows = await sql<
    {
      id: string;
      message_id: string;
      type: string;
      subscriber: string;
      aggregate_id: string;
      last_error: string | null;
      dead_at: Date;
      before: string[];
    }[]
  >`
    with chosen as (
      select d.id, d.subscriber, d.aggregate_id, ${version(sql, "m")} as version
        from ${deliveries} d
        join ${messages} m on m.message_id = d.message_id
       where d.id = any(${ids as number[]}::bigint[])
    )
    select e.id, e.message_id, e.type, e.subscriber, e.aggregate_id,
           e.last_error, e.dead_at,
           array_agg(c.id order by c.id) as before
      from ${deliveries} e
      join ${messages} m on m.message_id = e.message_id
      join chosen c on c.subscriber = e.subscriber
                   and c.aggregate_id = e.aggregate_id
     where e.state = 'dead'
       and e.id <> all(${ids as number[]}::bigint[])
       and (${version(sql, "m")}, e.id) < (c.version, c.id)
     group by e.id, e.message_id, e.type, e.subscriber, e.aggregate_id,
              e.last_error, e.dead_at, m.envelope
     order by e.subscriber, e.aggregate_id, ${version(sql, "m")}, e.id`;
  return rows.map((r) => ({
    id: Number(r.id),
    messageId: r.message_id,
    eventType: r.type,
    subscriber: r.subscriber,
    aggregateId: r.aggregate_id,
    lastError: r.last_error,
    deadAt: r.dead_at.toISOString(),
    before: r.before.map(Number),
  }));
}

/**
 * `ids` in the order a redrive sends them: each aggregate's dead letters
 * to one subscriber together and in the order they were written, the
 * aggregates by their first death (oldest first). A job that takes them a
 * slice at a time so never sends a message before an earlier one of its
 * aggregate. In the caller's queue transaction.
 */
export async function inSendingOrder(
  sql: TxSql,
  ids: readonly number[],
): Promise<number[]> {
  if (ids.length < 2) return [...ids];
  const rows = await sql<{ id: string }[]>`
    select d.id from ${sql(inQueue("deliveries"))} d
      join ${sql(inQueue("messages"))} m on m.message_id = d.message_id
     where d.id = any(${ids as number[]}::bigint[])
     order by min(d.dead_at) over (partition by d.subscriber, d.aggregate_id),
              d.subscriber, d.aggregate_id, ${version(sql, "m")}, d.id`;
  return rows.map((r) => Number(r.id));
}

/** A redriven delivery that died again, and the receiver's last answer. */
export interface DeadAgain {
  id: number;
  messageId: string;
  eventType: string;
  subscriber: string;
  aggregateId: string;
  lastError: string | null;
}

/** What became of redriven deliveries. */
export interface RedriveOutcome {
  /** Done: the receiver applied them (or had, and said so). */
  applied: number;
  /** Pending or in flight: not answered for good yet. */
  retrying: number;
  /** Dead again after the redrive, with the answer that killed them. */
  deadAgain: DeadAgain[];
  /** Closed by an operator since. */
  refused: number;
  /** Still dead, never redriven (a job has not reached them, or left them). */
  notRedriven: number;
}

/**
 * What became of deliveries `ids` since they were redriven, in the
 * caller's queue transaction. A dead one counts as dead again when it died
 * after an operator's redrive of it. Ids that are not the tenant's are not
 * counted.
 */
export async function redriveOutcome(
  sql: TxSql,
  ids: readonly number[],
): Promise<RedriveOutcome> {
  const outcome: RedriveOutcome = {
    applied: 0,
    retrying: 0,
    deadAgain: [],
    refused: 0,
    notRedriven: 0,
  };
  if (ids.length === 0) return outcome;
  const rows = await sql<
    {
      id: string;
      message_id: string;
      type: string;
      subscriber: string;
      aggregate_id: string;
      state: string;
      last_error: string | null;
      redriven_before: boolean;
    }[]
  >`
    select d.id, d.message_id, d.type, d.subscriber, d.aggregate_id,
           d.state, d.last_error,
           exists (select from ${sql(inQueue("actions"))} a
                    where a.delivery_id = d.id and a.action = 'redrive'
                      and a.at <= d.dead_at) as redriven_before
      from ${sql(inQueue("deliveries"))} d
     where d.id = any(${ids as number[]}::bigint[])
     order by d.id`;
  for (const r of rows) {
    if (r.state === "done") outcome.applied++;
    else if (r.state === "refused") outcome.refused++;
    else if (r.state !== "dead") outcome.retrying++;
    else if (!r.redriven_before) outcome.notRedriven++;
    else {
      outcome.deadAgain.push({
        id: Number(r.id),
        messageId: r.message_id,
        eventType: r.type,
        subscriber: r.subscriber,
        aggregateId: r.aggregate_id,
        lastError: r.last_error,
      });
    }
  }
  return outcome;
}
