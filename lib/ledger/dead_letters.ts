/**
 * What an operator does with dead letters: redrive (the same message id goes
 * again; the attempt history stays), refuse (the obligation is closed with
 * a reason, an actor and a time), or supersede (a corrected copy goes under
 * a new message id, and the original is refused). Nothing here deletes a
 * row or edits an envelope. Every call acts inside one tenant: another
 * tenant's dead letters do not match. Dead letters fall in failure groups:
 * subscriber, event type and the pattern of the last error
 * (queue.error_pattern, lib/ledger/migrations/0001_queue.sql).
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asService } from "../db/service.ts";
import { type Envelope, MAX_SUPERSEDES, uuidv7 } from "../outbox/envelope.ts";
import { QUEUE_CHANNEL } from "./channel.ts";
import { inQueue } from "../db/names.ts";
import { releaseHeld } from "./deliveries_sql.ts";

/** Which dead letters: explicit ids, or all that match the filter. */
export interface DeadLetterFilter {
  ids?: number[];
  subscriber?: string;
  eventType?: string;
  /** Died at or after. */
  since?: Date;
  /** Died before. */
  until?: Date;
  /** A failure group's key ({@link failureGroups}). */
  group?: string;
}

/** How a redrive reaches the transport. */
export interface RedriveOptions {
  /**
   * The transport carries messages outside PostgreSQL (JetStream): mark the
   * deliveries for its republisher (lib/carriers/jetstream/republisher.ts), which
   * gives the broker each message again for its one subscriber.
   */
  republish?: boolean;
  /**
   * Leave out dead letters whose message is older than this many days (the
   * receivers' duplicate memory; see {@link countDeadLetters}). Unset: all.
   */
  horizonDays?: number;
}

/** At most this many rows per call; the console says when more remain. */
export const MAX_BATCH = 1000;

/**
 * Redrives the matching dead letters, oldest first: each becomes due now with
 * one more attempt (if that fails too, it is dead again at once). Returns the
 * ids redriven, oldest first.
 */
export async function redrive(
  sql: Sql,
  tenantId: string,
  filter: DeadLetterFilter,
  actor: string,
  options: RedriveOptions = {},
): Promise<number[]> {
  return await asService(
    sql,
    "queue",
    { tenantId },
    ({ sql }) => redriveIn(sql, filter, actor, options),
  );
}

/** {@link redrive} inside the caller's queue transaction. */
export async function redriveIn(
  sql: TxSql,
  filter: DeadLetterFilter,
  actor: string,
  options: RedriveOptions = {},
): Promise<number[]> {
  const rows = await sql<{ id: string }[]>`
    with picked as (
      select id, dead_at from ${sql(inQueue("deliveries"))}
       where state = 'dead' ${matches(sql, filter)}
         ${
    options.horizonDays === undefined
      ? sql``
      : sql`and not ${beyond(sql, options.horizonDays)}`
  }
       order by dead_at, id
       limit ${MAX_BATCH}
       for update
    ), u as (
      update ${sql(inQueue("deliveries"))} d
         set state = 'pending',
             next_attempt_at = now(),
             max_attempts = d.attempts + 1,
             redrives = d.redrives + 1,
             republish_at = case when ${options.republish ?? false}
               then now() end
        from picked where d.id = picked.id
      returning d.id, d.tenant_id
    ), a as (
      insert into ${sql(inQueue("actions"))}
        (tenant_id, delivery_id, action, actor)
      select tenant_id, id, 'redrive', ${actor} from u
    )
    select u.id from u join picked using (id) order by picked.dead_at, u.id`;
  if (rows.length > 0) await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
  return rows.map((r) => Number(r.id));
}

/**
 * Refuses the matching dead letters: closed as refused with `reason`, `actor`
 * and the time. Returns the ids refused.
 */
export async function refuse(
  sql: Sql,
  tenantId: string,
  filter: DeadLetterFilter,
  reason: string,
  actor: string,
  options: { republish?: boolean } = {},
): Promise<number[]> {
  return await asService(
    sql,
    "queue",
    { tenantId },
    ({ sql }) => refuseIn(sql, filter, reason, actor, options),
  );
}

/** {@link refuse} inside the caller's queue transaction. */
export async function refuseIn(
  sql: TxSql,
  filter: DeadLetterFilter,
  reason: string,
  actor: string,
  options: { republish?: boolean } = {},
): Promise<number[]> {
  if (!reason.trim()) throw new TypeError("a refusal needs a reason");
  const rows = await sql<{ id: string; released: number }[]>`
    with picked as (
      select id from ${sql(inQueue("deliveries"))}
       where state = 'dead' ${matches(sql, filter)}
       order by dead_at, id
       limit ${MAX_BATCH}
       for update
    ), u as (
      update ${sql(inQueue("deliveries"))} d
         set state = 'refused', refused_reason = ${reason},
             refused_by = ${actor}, refused_at = now()
        from picked where d.id = picked.id
      returning d.id, d.tenant_id
    ), a as (
      insert into ${sql(inQueue("actions"))}
        (tenant_id, delivery_id, action, actor, reason)
      select tenant_id, id, 'refuse', ${actor}, ${reason} from u
    ), released as (
      -- What waited behind a refused one goes on, in its own order.
      ${releaseHeld(sql, sql`select id from u`, options.republish ?? false)}
    )
    select id, (select count(*) from released)::int as released
      from u order by id`;
  // Consumers (and a republisher) take the released ones at once.
  if (rows.some((r) => r.released > 0)) {
    await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
  }
  return rows.map((r) => Number(r.id));
}

function matches(sql: TxSql, f: DeadLetterFilter) {
  const failureGroup = sql(inQueue("failure_group"));
  return sql`
    ${f.ids ? sql`and id = any(${f.ids}::bigint[])` : sql``}
    ${f.subscriber ? sql`and subscriber = ${f.subscriber}` : sql``}
    ${f.eventType ? sql`and type = ${f.eventType}` : sql``}
    ${f.since ? sql`and dead_at >= ${f.since}` : sql``}
    ${f.until ? sql`and dead_at < ${f.until}` : sql``}
    ${
    f.group
      ? sql`and ${failureGroup}(subscriber, type, last_error) = ${f.group}`
      : sql``
  }`;
}

/**
 * True for a delivery whose message is older than `days`: the receivers'
 * inboxes refuse an unseen message older than their replay horizon
 * (lib/inbox/receive.ts), so a redrive of it is refused again unless the
 * inbox saw it before. Age is the envelope's `occurredAt`, as the inbox
 * reckons it. `deliveries` names the deliveries table as the query does.
 */
export function beyond(
  sql: TxSql,
  days: number,
  deliveries = inQueue("deliveries"),
) {
  return sql`coalesce((
    select (m.envelope->>'occurredAt')::timestamptz < now() - ${days} * interval '1 day'
      from ${sql(inQueue("messages"))} m
        where m.message_id = ${sql(deliveries)}.message_id),
    false)`;
}

/** The matching dead letters, oldest first, and which lie beyond the horizon. */
export interface MatchedDeadLetters {
  ids: number[];
  /** Those whose message is older than the horizon. */
  beyondHorizon: number[];
}

/**
 * Every matching dead letter, oldest first, in the caller's queue
 * transaction: what a dry run counts and a bulk job works through.
 */
export async function matchDeadLetters(
  sql: TxSql,
  filter: DeadLetterFilter,
  horizonDays: number,
): Promise<MatchedDeadLetters> {
  const rows = await sql<{ id: string; beyond: boolean }[]>`
    select id, ${beyond(sql, horizonDays)} as beyond from
      ${sql(inQueue("deliveries"))}
     where state = 'dead' ${matches(sql, filter)}
     order by dead_at, id`;
  return {
    ids: rows.map((r) => Number(r.id)),
    beyondHorizon: rows.filter((r) => r.beyond).map((r) => Number(r.id)),
  };
}

/** Dead letters of one subscriber, event type and error pattern. */
export interface FailureGroup {
  key: string;
  subscriber: string;
  eventType: string;
  pattern: string;
  count: number;
  firstDeadAt: string;
  lastDeadAt: string;
}

/** The tenant's failure groups, largest first. */
export async function failureGroups(
  sql: Sql,
  tenantId: string,
): Promise<FailureGroup[]> {
  const rows = await asService(sql, "queue", { tenantId }, ({ sql }) =>
    sql<
      {
        key: string;
        subscriber: string;
        type: string;
        pattern: string;
        n: number;
        first: Date;
        last: Date;
      }[]
    >`
      select ${sql(inQueue("failure_group"))}(subscriber, type, last_error)
               as key,
             subscriber, type,
             ${sql(inQueue("error_pattern"))}(last_error) as pattern,
             count(*)::int as n, min(dead_at) as first, max(dead_at) as last
        from ${sql(inQueue("deliveries"))} where state = 'dead'
       group by 1, 2, 3, 4
       order by n desc, first, key`);
  return rows.map((r) => ({
    key: r.key,
    subscriber: r.subscriber,
    eventType: r.type,
    pattern: r.pattern,
    count: r.n,
    firstDeadAt: r.first.toISOString(),
    lastDeadAt: r.last.toISOString(),
  }));
}

/** A dead letter whose line of copies is as long as an envelope allows. */
export class TooManySupersessions extends Error {
  override name = "TooManySupersessions";
  constructor(readonly messageId: string, readonly standsFor: number) {
    super(
      `message ${messageId} stands in for ${standsFor} messages already, and a copy names at most ${MAX_SUPERSEDES}: refuse it, or fix what makes it fail`,
    );
  }
}

/** A dead letter that was superseded, and by which message. */
export interface Superseded {
  /** The corrected copy's message id. */
  messageId: string;
  /** Its delivery to the same subscriber. */
  deliveryId: number;
}

/**
 * Supersedes dead letter `id`: a copy of its envelope with `payload` in
 * place of the old one, a new message id, the time of now and the ids it
 * stands in for (`supersedes`: those the dead letter stood in for, then
 * its own), stored as a new message with one delivery to the same
 * subscriber, linked to the original (queue.supersessions); the original
 * is refused with the reason "superseded by <new id>". The original
 * envelope is not touched. Returns null when `id` is not a dead letter of
 * the tenant; throws {@link TooManySupersessions} when its line is full.
 * Runs in the caller's queue transaction; the caller validates `payload`
 * against the event type's schema, and may ask the receiver first whether
 * it applied the dead letter after all (lib/inbox `appliedOf`).
 */
export async function supersedeIn(
  sql: TxSql,
  tenantId: string,
  id: number,
  payload: Record<string, unknown>,
  actor: string,
  reason: string,
  options: Pick<RedriveOptions, "republish"> = {},
): Promise<Superseded | null> {
  const [old] = await sql<
    { subscriber: string; source: string; envelope: Envelope }[]
  >`
    select d.subscriber, m.source, m.envelope
      from ${sql(inQueue("deliveries"))} d
      join ${sql(inQueue("messages"))} m on m.message_id = d.message_id
     where d.id = ${id} and d.state = 'dead' for update of d`;
  if (!old) return null;
  // The copy names what it stands in for, so that the receiver applies
  // nothing when its inbox has applied the dead letter after all (a lost
  // acknowledgement, a timeout that committed). A copy of a copy names the
  // whole line: any of them may be the one that was applied.
  const line = [...(old.envelope.supersedes ?? []), old.envelope.messageId];
  if (line.length > MAX_SUPERSEDES) {
    throw new TooManySupersessions(old.envelope.messageId, line.length - 1);
  }
  const envelope: Envelope = {
    ...old.envelope,
    messageId: uuidv7(),
    occurredAt: new Date().toISOString(),
    payload,
    supersedes: line,
  };
  await sql`
    insert into ${sql(inQueue("messages"))}
      (message_id, tenant_id, source, type,
                                aggregate_id, envelope)
    values (${envelope.messageId}, ${tenantId}, ${old.source},
            ${envelope.type}, ${envelope.aggregateId},
            ${sql.json(envelope as never)})`;
  const [delivery] = await sql<{ id: string }[]>`
    insert into ${sql(inQueue("deliveries"))}
      (tenant_id, message_id, subscriber, type,
                                  aggregate_id, republish_at)
    values (${tenantId}, ${envelope.messageId}, ${old.subscriber},
            ${envelope.type}, ${envelope.aggregateId},
            ${options.republish ? sql`now()` : null})
    returning id`;
  await refuseIn(
    sql,
    { ids: [id] },
    `superseded by ${envelope.messageId}`,
    actor,
    { republish: options.republish },
  );
  await sql`
    insert into ${sql(inQueue("supersessions"))}
      (delivery_id, tenant_id, message_id,
                                     actor, reason)
    values (${id}, ${tenantId}, ${envelope.messageId}, ${actor}, ${reason})`;
  await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
  return { messageId: envelope.messageId, deliveryId: Number(delivery.id) };
}

/** A dead letter with the message it holds, for a preview of its redrive. */
export interface DeadMessage {
  id: number;
  subscriber: string;
  envelope: Envelope;
}

/**
 * The dead letters among `ids` in one tenant, with their messages, in the
 * order a redrive sends them (each aggregate's by version). A dead letter
 * whose message the ledger does not hold is left out.
 */
export async function deadMessages(
  sql: Sql,
  tenantId: string,
  ids: readonly number[],
): Promise<DeadMessage[]> {
  if (ids.length === 0) return [];
  const rows = await asService(
    sql,
    "queue",
    { tenantId },
    ({ sql }) =>
      sql<{ id: string; subscriber: string; envelope: Envelope }[]>`
      select d.id, d.subscriber, m.envelope
        from ${sql(inQueue("deliveries"))} d
        join ${sql(inQueue("messages"))} m on m.message_id = d.message_id
       where d.id = any(${ids as number[]}::bigint[]) and d.state = 'dead'
       order by d.aggregate_id, (m.envelope->>'aggregateVersion')::int, d.id`,
  );
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * Dead letters as an operator acts on them: redrive, refuse and supersede,
 * each told once what the carrier needs of a redrive. It is what
 * `Messaging.deadLetters` is (lib/messaging.ts), so that no caller carries
 * "which carrier runs" to the place that acts. Each call takes the pool or
 * transaction of the ledger that holds the rows: one, or in a database per
 * sender, the sender's.
 */
export interface DeadLetters {
  redrive(
    sql: Sql,
    tenantId: string,
    filter: DeadLetterFilter,
    actor: string,
    options?: Omit<RedriveOptions, "republish">,
  ): Promise<number[]>;
  /** {@link redriveIn}: inside the caller's queue transaction. */
  redriveIn(
    sql: TxSql,
    filter: DeadLetterFilter,
    actor: string,
    options?: Omit<RedriveOptions, "republish">,
  ): Promise<number[]>;
  refuse(
    sql: Sql,
    tenantId: string,
    filter: DeadLetterFilter,
    reason: string,
    actor: string,
  ): Promise<number[]>;
  /** {@link refuseIn}: inside the caller's queue transaction. */
  refuseIn(
    sql: TxSql,
    filter: DeadLetterFilter,
    reason: string,
    actor: string,
  ): Promise<number[]>;
  /** {@link supersedeIn}: inside the caller's queue transaction. */
  supersedeIn(
    sql: TxSql,
    tenantId: string,
    id: number,
    payload: Record<string, unknown>,
    actor: string,
    reason: string,
  ): Promise<Superseded | null>;
}

/**
 * The dead letters of a ledger whose carrier `republishes` a redriven
 * message (it keeps a copy of its own: JetStream) or not (PostgreSQL).
 */
export function deadLetters(republish: boolean): DeadLetters {
  return {
    redrive: (sql, tenantId, filter, actor, options = {}) =>
      redrive(sql, tenantId, filter, actor, { ...options, republish }),
    redriveIn: (sql, filter, actor, options = {}) =>
      redriveIn(sql, filter, actor, { ...options, republish }),
    refuse: (sql, tenantId, filter, reason, actor) =>
      refuse(sql, tenantId, filter, reason, actor, { republish }),
    refuseIn: (sql, filter, reason, actor) =>
      refuseIn(sql, filter, reason, actor, { republish }),
    supersedeIn: (sql, tenantId, id, payload, actor, reason) =>
      supersedeIn(sql, tenantId, id, payload, actor, reason, { republish }),
  };
}
