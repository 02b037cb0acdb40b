/**
 * The closure audit: every delivery that is done is checked once against
 * its subscriber's inbox. Found: counted as closed. Not found: the
 * acknowledgement has no effect behind it, counted as a mismatch and kept as
 * a row. Afterwards the console reads counters instead of joining years of
 * history to the inboxes.
 *
 * The audit keeps a position per subscriber, not a mark per delivery (a
 * mark wrote every done delivery once more). A finish records its
 * transaction id (`done_xid`), and the audit takes done deliveries in
 * (done_xid, id) order, only those done by a transaction older than every
 * one still running: a delivery that turns done later has a larger id of
 * transaction, so none can turn up behind a position.
 *
 * Two transactions per batch: the inboxes are read as a role that may read
 * them (`reader`, e.g. a read-only console role), the results written as
 * `queue`. The write moves each position on only from where the batch was
 * read, so two auditors never count a delivery twice.
 *
 * An inbox in another database than the queue's ({@link
 * AuditOptions.inboxDatabase}) cannot be joined in a statement: its batch's
 * message ids are read from the queue, then looked up in the inbox's
 * database, a batch at a time. No transaction spans the two.
 */
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import type { TickResult } from "../wake/loop.ts";
import { inQueue } from "../db/names.ts";
import { wipeNotBegun } from "../db/closed.ts";

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

interface Batched {
  id: string;
  tenant_id: string;
  subscriber: string;
  message_id: string;
  done_xid: string;
  /** Where the subscriber's position stood when the batch was read. */
  from_xid: string;
  from_id: string;
  /** The subscriber had no position yet. */
  fresh: boolean;
}

interface Checked extends Batched {
  accepted: boolean;
}

/**
 * `subscriber`'s done deliveries not counted yet, as a condition on the
 * delivery `d`: past the subscriber's position, found by a range of the
 * done deliveries' index. Read with the counters in one snapshot, so that
 * none is counted twice or missed.
 */
export function uncounted(sql: TxSql, subscriber: string): Fragment {
  return sql`(d.state = 'done' and d.subscriber = ${subscriber}
    and (d.done_xid, d.id) > (${position(sql, subscriber)}))`;
}

/**
 * The delivery `d` is done and counted: its subscriber's position is at or
 * past it.
 */
export function counted(sql: Sql | TxSql): Fragment {
  return sql`(d.state = 'done' and exists (
    select from ${sql(inQueue("audit_positions"))} p
     where p.subscriber = d.subscriber
       and (d.done_xid, d.id) <= (p.done_xid, p.id)))`;
}

/**
 * Where `subscriber`'s position stands, as one row (done_xid, id, fresh):
 * before everything, and fresh, when it has none.
 */
function positionRow(sql: TxSql, subscriber: string): Fragment {
  return sql`
    select coalesce(max(p.done_xid), '0'::xid8) as done_xid,
           coalesce(max(p.id), 0) as id, count(p.*) = 0 as fresh
      from ${sql(inQueue("audit_positions"))} p
     where p.subscriber = ${subscriber}`;
}

/**
 * The position's two halves, each a subquery of its own: under row-level
 * security, PostgreSQL uses a condition for an index only when it can tell
 * that it leaks nothing, and it cannot tell that of a COALESCE around a
 * subquery. With one there, the console's counts read every done delivery
 * of the subscriber (1.2 s at a million) instead of none.
 */
function position(sql: TxSql, subscriber: string): Fragment {
  return sql`
    (select done_xid from (${positionRow(sql, subscriber)}) f),
    (select id from (${positionRow(sql, subscriber)}) f)`;
}

/**
 * The next batch of `subscriber`'s done deliveries, past its position, in
 * the order they turned done, up to the oldest transaction still running.
 */
function nextBatch(sql: TxSql, subscriber: string, limit: number): Fragment {
  // The position as values known before the scan, not a join: the index
  // then gives the rows in order and the scan stops at the limit, where a
  // join sorted every delivery past the position (168 ms a batch behind a
  // backlog of 60,000).
  return sql`
    with f as (${positionRow(sql, subscriber)})
    select d.id, d.tenant_id, d.subscriber, d.message_id,
           d.done_xid::text, (select done_xid::text from f) as from_xid,
           (select id from f) as from_id, (select fresh from f) as fresh
      from ${sql(inQueue("deliveries"))} d
     where d.state = 'done' and d.subscriber = ${subscriber}
       and (d.done_xid, d.id) > ((select done_xid from f), (select id from f))
       and d.done_xid < pg_snapshot_xmin(pg_current_snapshot())
     order by d.done_xid, d.id limit ${limit}`;
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
            select b.*, (i.message_id is not null) as accepted
              from (${nextBatch(sql, subscriber, limit)}) b
              left join ${
            sql(options.inboxOf(subscriber))
          } i on i.message_id = b.message_id)`
        ).reduce((all, one) => sql`${all} union all ${one}`)
      }`,
    // Planned once per connection: planning this union took longer than
    // running it (bench/HISTORY.md).
    { genericPlans: true },
  );
  for (const [subscriber, inboxSql] of apart) {
    checked.push(...await checkApart(options, subscriber, inboxSql, limit));
  }
  if (checked.length === 0) return { more: false };
  await record(options.sql, checked).catch((e) => {
    if (!(e instanceof Overtaken)) throw e;
  });
  return {
    more: checked.length >= limit,
    touched: [...new Set(checked.map((c) => c.tenant_id))],
  };
}

/** `a` turned done after `b`, in the audit's order. */
function after(a: Batched, b: Batched): boolean {
  const [x, y] = [BigInt(a.done_xid), BigInt(b.done_xid)];
  return x > y || x === y && BigInt(a.id) > BigInt(b.id);
}

/** Another auditor moved a position this batch was read from. */
class Overtaken extends Error {}

/**
 * Counts a batch and moves each subscriber's position to its last
 * delivery, in one transaction: only from where the batch was read, or
 * none of it is counted.
 */
async function record(sql: Sql, checked: Checked[]): Promise<void> {
  const ends = new Map<string, Checked>();
  for (const c of checked) {
    const end = ends.get(c.subscriber);
    if (!end || after(c, end)) ends.set(c.subscriber, c);
  }
  const lasts = [...ends.values()];
  await asBookkeeper(sql, "queue", async ({ sql }) => {
    const positions = sql(inQueue("audit_positions"));
    const [{ moved }] = await sql<{ moved: number }[]>`
      with e as (
        select * from unnest(
          ${lasts.map((l) => l.subscriber)}::text[],
          ${lasts.map((l) => l.from_xid)}::xid8[],
          ${lasts.map((l) => l.from_id)}::bigint[],
          ${lasts.map((l) => l.fresh ? 1 : 0)}::int[],
          ${lasts.map((l) => l.done_xid)}::xid8[],
          ${lasts.map((l) => l.id)}::bigint[])
          as e(subscriber, from_xid, from_id, fresh, done_xid, id)
      ), moved as (
        update ${positions} p set done_xid = e.done_xid, id = e.id
          from e
         where p.subscriber = e.subscriber and e.fresh = 0
           and (p.done_xid, p.id) = (e.from_xid, e.from_id)
        returning p.subscriber
      ), started as (
        insert into ${positions} (subscriber, done_xid, id)
        select subscriber, done_xid, id from e where fresh = 1
        on conflict (subscriber) do nothing
        returning subscriber
      )
      select (select count(*) from moved)::int
             + (select count(*) from started)::int as moved`;
    if (moved !== lasts.length) throw new Overtaken();
    await sql`
      with r as (
        select * from unnest(
          ${checked.map((c) => c.id)}::bigint[],
          ${checked.map((c) => c.tenant_id)}::uuid[],
          ${checked.map((c) => c.subscriber)}::text[],
          ${checked.map((c) => c.message_id)}::uuid[],
          -- postgres.js sends a JS boolean array badly; 1 and 0 travel well.
          ${checked.map((c) => c.accepted ? 1 : 0)}::int[])
          as r(id, tenant_id, subscriber, message_id, ok)
        -- Nothing counted for a tenant being wiped or wiped: the batch may
        -- have been read before the wipe closed it, and the wipe may have
        -- deleted its counts already.
        where ${wipeNotBegun(sql, "r.tenant_id")}
      ), m as (
        insert into ${sql(inQueue("mismatches"))}
          (delivery_id, tenant_id, subscriber, message_id)
        select id, tenant_id, subscriber, message_id from r where ok = 0
      )
      insert into ${sql(inQueue("closure_counts"))}
        (tenant_id, subscriber, closed, mismatch)
      select tenant_id, subscriber,
             count(*) filter (where ok = 1), count(*) filter (where ok = 0)
        from r group by tenant_id, subscriber
      on conflict (tenant_id, subscriber) do update
         set closed =
           ${sql(inQueue("closure_counts"))}.closed + excluded.closed,
             mismatch =
               ${sql(inQueue("closure_counts"))}.mismatch + excluded.mismatch`;
  });
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
    ({ sql }) => sql<Batched[]>`${nextBatch(sql, subscriber, limit)}`,
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
