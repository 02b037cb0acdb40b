/**
 * What an operator does with dead letters: redrive (the same message id goes
 * again; the attempt history stays) or refuse (the obligation is closed with
 * a reason, an actor and a time). Nothing here deletes a row. Every call acts
 * inside one sandbox: another sandbox's dead letters do not match.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asService } from "../db/service.ts";
import { QUEUE_CHANNEL } from "./channel.ts";

/** Which dead letters: explicit ids, or all that match the filter. */
export interface DeadLetterFilter {
  ids?: number[];
  subscriber?: string;
  eventType?: string;
  /** Died at or after. */
  since?: Date;
  /** Died before. */
  until?: Date;
}

/** How a redrive reaches the transport. */
export interface RedriveOptions {
  /**
   * The transport carries messages outside PostgreSQL (JetStream): mark the
   * deliveries for its republisher (lib/queue/jetstream/redrive.ts), which
   * gives the broker each message again for its one subscriber.
   */
  republish?: boolean;
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
  sandboxId: string,
  filter: DeadLetterFilter,
  actor: string,
  options: RedriveOptions = {},
): Promise<number[]> {
  return await asService(sql, "queue", { sandboxId }, async ({ sql }) => {
    const rows = await sql<{ id: string }[]>`
      with picked as (
        select id, dead_at from queue.deliveries
         where state = 'dead' ${matches(sql, filter)}
         order by dead_at, id
         limit ${MAX_BATCH}
         for update
      ), u as (
        update queue.deliveries d
           set state = 'pending',
               next_attempt_at = now(),
               max_attempts = d.attempts + 1,
               redrives = d.redrives + 1,
               republish_at = case when ${options.republish ?? false}
                 then now() end
          from picked where d.id = picked.id
        returning d.id, d.sandbox_id
      ), a as (
        insert into queue.actions (sandbox_id, delivery_id, action, actor)
        select sandbox_id, id, 'redrive', ${actor} from u
      )
      select u.id from u join picked using (id) order by picked.dead_at, u.id`;
    if (rows.length > 0) await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
    return rows.map((r) => Number(r.id));
  });
}

/**
 * Refuses the matching dead letters: closed as refused with `reason`, `actor`
 * and the time. Returns the ids refused.
 */
export async function refuse(
  sql: Sql,
  sandboxId: string,
  filter: DeadLetterFilter,
  reason: string,
  actor: string,
): Promise<number[]> {
  if (!reason.trim()) throw new TypeError("a refusal needs a reason");
  return await asService(sql, "queue", { sandboxId }, async ({ sql }) => {
    const rows = await sql<{ id: string }[]>`
      with picked as (
        select id from queue.deliveries
         where state = 'dead' ${matches(sql, filter)}
         order by dead_at, id
         limit ${MAX_BATCH}
         for update
      ), u as (
        update queue.deliveries d
           set state = 'refused', refused_reason = ${reason},
               refused_by = ${actor}, refused_at = now()
          from picked where d.id = picked.id
        returning d.id, d.sandbox_id
      ), a as (
        insert into queue.actions (sandbox_id, delivery_id, action, actor, reason)
        select sandbox_id, id, 'refuse', ${actor}, ${reason} from u
      )
      select id from u order by id`;
    return rows.map((r) => Number(r.id));
  });
}

function matches(sql: TxSql, f: DeadLetterFilter) {
  return sql`
    ${f.ids ? sql`and id = any(${f.ids}::bigint[])` : sql``}
    ${f.subscriber ? sql`and subscriber = ${f.subscriber}` : sql``}
    ${f.eventType ? sql`and type = ${f.eventType}` : sql``}
    ${f.since ? sql`and dead_at >= ${f.since}` : sql``}
    ${f.until ? sql`and dead_at < ${f.until}` : sql``}`;
}
