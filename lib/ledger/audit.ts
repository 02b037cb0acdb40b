/**
 * The closure audit: every delivery that is done is checked once against
 * its subscriber's inbox. Found: counted as closed. Not found: the
 * acknowledgement has no effect behind it, counted as a mismatch and kept as
 * a row. Afterwards the console reads counters instead of joining years of
 * history to the inboxes.
 *
 * Two transactions per batch: the inboxes are read as a role that may read
 * them (`reader`, e.g. a read-only console role), the results written as
 * `queue`. The write is fenced by `not audited`, so two auditors never count
 * a delivery twice.
 *
 * An inbox in another database than the queue's ({@link
 * AuditOptions.inboxDatabase}) cannot be joined in a statement: its batch's
 * message ids are read from the queue, then looked up in the inbox's
 * database, a batch at a time. No transaction spans the two.
 */
import type { Sql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import type { TickResult } from "../wake/loop.ts";
import { inQueue } from "../db/names.ts";
import { notWiping } from "../db/closed.ts";

export interface AuditOptions {
  sql: Sql;
  /** A role that may read every subscriber's inbox. */
  reader: string;
  /** The inbox table of a subscriber (`billing` -> `billing.inbox`). */
  inboxOf: (subscriber: string) => string;
  subscribers: readonly string[];
  /**
   * The pool of a subscriber's database, when its inbox is not in the
   * queue's. `reader` must be a role there too, that may read the inbox.
   */
  inboxDatabase?: (subscriber: string) => Sql | undefined;
  /** Deliveries per batch; 1000 keeps each statement short. */
  batchSize?: number;
}

interface Checked {
  id: string;
  tenant_id: string;
  subscriber: string;
  message_id: string;
  accepted: boolean;
}

/** Audits one batch of done deliveries. */
export async function auditOnce(options: AuditOptions): Promise<TickResult> {
  const limit = options.batchSize ?? 1000;
  const joined: string[] = [];
  const apart: [string, Sql][] = [];
  for (const s of options.subscribers) {
    const db = options.inboxDatabase?.(s);
    if (db) apart.push([s, db]);
    else joined.push(s);
  }
  const checked: Checked[] = joined.length === 0 ? [] : await asBookkeeper(
    options.sql,
    options.reader,
    // One statement for every subscriber (one round trip, not one each).
    ({ sql }) =>
      sql<Checked[]>`${
        joined.map((subscriber) =>
          sql`(
            select d.id, d.tenant_id, d.subscriber, d.message_id,
                   (i.message_id is not null) as accepted
              from ${sql(inQueue("deliveries"))} d
              left join ${
            sql(options.inboxOf(subscriber))
          } i on i.message_id = d.message_id
             where d.state = 'done' and not d.audited
               and d.subscriber = ${subscriber}
             order by d.id limit ${limit})`
        ).reduce((all, one) => sql`${all} union all ${one}`)
      }`,
  );
  for (const [subscriber, inboxSql] of apart) {
    checked.push(...await checkApart(options, subscriber, inboxSql, limit));
  }
  if (checked.length === 0) return { more: false };
  await asBookkeeper(options.sql, "queue", async ({ sql }) => {
    await sql`
      with r as (
        -- postgres.js sends a JS boolean array badly; 1 and 0 travel well.
        select id, ok = 1 as accepted from unnest(
          ${checked.map((c) => c.id)}::bigint[],
          ${checked.map((c) => c.accepted ? 1 : 0)}::int[]) as r(id, ok)
      ), u as (
        -- Nothing counted for a tenant being wiped: the wipe may have
        -- deleted its counts already.
        update ${sql(inQueue("deliveries"))} d set audited = true
          from r where d.id = r.id and not d.audited and d.state = 'done'
           and ${notWiping(sql, "d.tenant_id")}
        returning d.id, d.tenant_id, d.subscriber, d.message_id, r.accepted
      ), m as (
        insert into ${sql(inQueue("mismatches"))}
          (delivery_id, tenant_id, subscriber, message_id)
        select id, tenant_id, subscriber, message_id from u where not accepted
      )
      insert into ${sql(inQueue("closure_counts"))}
        (tenant_id, subscriber, closed, mismatch)
      select tenant_id, subscriber,
             count(*) filter (where accepted), count(*) filter (where not accepted)
        from u group by tenant_id, subscriber
      on conflict (tenant_id, subscriber) do update
         set closed =
           ${sql(inQueue("closure_counts"))}.closed + excluded.closed,
             mismatch =
               ${sql(inQueue("closure_counts"))}.mismatch + excluded.mismatch`;
  });
  return {
    more: checked.length >= limit,
    touched: [...new Set(checked.map((c) => c.tenant_id))],
  };
}

/**
 * One batch of `subscriber`'s done deliveries, its inbox in the database of
 * `inboxSql`.
 */
async function checkApart(
  options: AuditOptions,
  subscriber: string,
  inboxSql: Sql,
  limit: number,
): Promise<Checked[]> {
  const done = await asBookkeeper(
    options.sql,
    options.reader,
    ({ sql }) =>
      sql<Omit<Checked, "accepted">[]>`
        select id, tenant_id, subscriber, message_id from
          ${sql(inQueue("deliveries"))}
         where state = 'done' and not audited and subscriber = ${subscriber}
         order by id limit ${limit}`,
  );
  if (done.length === 0) return [];
  const found = await asBookkeeper(
    inboxSql,
    options.reader,
    ({ sql }) =>
      sql<{ message_id: string }[]>`
        select message_id from ${sql(options.inboxOf(subscriber))}
         where message_id = any(${done.map((d) => d.message_id)}::uuid[])`,
  );
  const accepted = new Set(found.map((r) => r.message_id));
  return done.map((d) => ({ ...d, accepted: accepted.has(d.message_id) }));
}
