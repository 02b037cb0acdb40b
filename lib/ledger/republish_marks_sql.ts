/**
 * Redrive marks: a delivery whose carrier keeps its own copy of each
 * message (a broker) must be given to it again when it is redriven, or
 * when the broker lost it. The mark (`republish_at`) works as an outbox:
 * claimed with a lease, cleared once the broker took the copy unless a
 * later redrive marked it again. These are its statements; the
 * republisher that acts on them is the carrier's
 * (lib/carriers/jetstream/republisher.ts).
 */
import type { Sql } from "../db/connect.ts";
import { bookkeepingStatement } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { inQueue } from "../db/names.ts";
import { notWiping } from "../db/closed.ts";

/** A claimed mark, with its message where the ledger holds one. */
export interface MarkRow {
  id: string;
  tenant_id: string;
  message_id: string;
  subscriber: string;
  redrives: number;
  republishes: number;
  /** Null, with `envelope`, where the message has no row. */
  source: string | null;
  envelope: Envelope | null;
}

/**
 * Claims up to `batch` due marks, oldest first, pushing each `leaseMs`
 * on, the ones with no message row too: a claim that left a mark due
 * would be taken again at once. Not for a tenant being wiped: the broker
 * is purged of it.
 */
export async function claimMarks(
  sql: Sql,
  options: { batch: number; leaseMs: number },
): Promise<MarkRow[]> {
  return await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql<MarkRow[]>`
      with due as (
        select id from ${sql(inQueue("deliveries"))}
         where republish_at <= now()
           and ${notWiping(sql, "tenant_id")}
         order by republish_at, id
         limit ${options.batch}
         for update skip locked
      ), u as (
        update ${sql(inQueue("deliveries"))} d
           set republish_at = now() + ${options.leaseMs} * interval '1 millisecond'
          from due
         where d.id = due.id
        returning d.id, d.tenant_id, d.message_id, d.subscriber, d.redrives,
                  d.republishes
      )
      select u.*, m.source, m.envelope
        from u left join ${sql(inQueue("messages"))} m
          on m.message_id = u.message_id`,
  );
}

/**
 * When the next mark falls due, if one is marked for later. Only a future
 * time: a mark due now and not claimed is another process's claim, which
 * pushes it; a loop must not go round for it.
 */
export async function nextMarkAt(sql: Sql): Promise<Date | undefined> {
  const [next] = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql<{ at: Date | null }[]>`
      select min(republish_at) as at from ${sql(inQueue("deliveries"))}
       where republish_at > now()
         and ${notWiping(sql, "tenant_id")}`,
  );
  return next?.at ?? undefined;
}

/**
 * Clears the marks of copies the broker took. Fenced by the copy
 * published: a redrive or a republish marked meanwhile (a higher count)
 * keeps its mark, for the next round.
 */
export async function clearMarks(
  sql: Sql,
  marks: readonly Pick<MarkRow, "id" | "redrives" | "republishes">[],
): Promise<void> {
  await bookkeepingStatement(sql, "queue", ({ sql }) =>
    sql`
      update ${sql(inQueue("deliveries"))} d set republish_at = null
        from unnest(${marks.map((m) => m.id)}::bigint[],
                    ${marks.map((m) => m.redrives)}::int[],
                    ${marks.map((m) => m.republishes)}::int[])
             as p(id, redrives, republishes)
       where d.id = p.id and d.redrives = p.redrives
         and d.republishes = p.republishes`);
}
