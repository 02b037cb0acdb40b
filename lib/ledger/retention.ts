/**
 * Retention: finished work is kept for as long as a sender may still send
 * it again, then removed. A receiver refuses a message older than its
 * replay horizon before it looks at its inbox (lib/inbox `beyondHorizon`),
 * so once the horizon has passed, neither the message's inbox row nor its
 * history is needed to keep it from being applied twice. The caller sets
 * `before` to the horizon plus a margin.
 *
 * What goes, older than `before`:
 * - done deliveries the closure audit has counted, with their attempts;
 * - the queue's copy of a message (the published outbox row) once none of
 *   its deliveries is left;
 * - inbox rows of messages no sender may retry: a message with a delivery
 *   still open, or dead (an operator may redrive it), keeps its row.
 *
 * What stays: dead and refused deliveries, and any delivery an operator
 * acted on (queue.actions), the audit found missing (queue.mismatches) or
 * superseded (queue.supersessions); those are the rows that say why.
 *
 * Each batch is one short transaction of its own, rows taken with SKIP
 * LOCKED: no long lock, and work in flight is never waited for.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asOwner } from "../db/service.ts";
import { inQueue } from "../db/names.ts";
import { counted } from "./audit.ts";

export interface RetentionOptions {
  /** Rows finished (received, published) before this moment may go. */
  before: Date;
  /** The subscribers whose inboxes are pruned: `<subscriber>.inbox`. */
  subscribers: readonly string[];
  /** Rows per transaction (default 1,000). */
  batch?: number;
  /**
   * For inboxes whose queue is in another database (each service in a
   * database of its own): of `messageIds`, old inbox rows of `subscriber`,
   * those whose delivery is still open or dead in the queue that sends
   * them. Without it, the queue beside the inbox is asked, in the same
   * statement.
   */
  stillOwed?: (
    subscriber: string,
    messageIds: readonly string[],
  ) => Promise<ReadonlySet<string>>;
}

/** How many rows a pass removed, by table. */
export interface Pruned {
  deliveries: number;
  attempts: number;
  messages: number;
  /** Inbox rows, by subscriber. */
  inboxes: Record<string, number>;
}

const SUBSCRIBER = /^[a-z][a-z_]{1,30}$/;

/** Removes what is older than `before`, batch by batch, until none is left. */
export async function pruneHistory(
  sql: Sql,
  options: RetentionOptions,
): Promise<Pruned> {
  const queue = await pruneQueue(sql, options);
  return { ...queue, inboxes: await pruneInboxes(sql, options) };
}

/** {@link pruneHistory}'s part in the queue's own tables. */
export async function pruneQueue(
  sql: Sql,
  options: Omit<RetentionOptions, "subscribers" | "stillOwed">,
): Promise<Omit<Pruned, "inboxes">> {
  const batch = options.batch ?? 1_000;
  const before = options.before;
  const pruned = { deliveries: 0, attempts: 0, messages: 0 };
  await untilDone(batch, () =>
    asOwner(sql, async (tx) => {
      // Done deliveries finish in about the order they started, so the
      // block range index on last_started_at finds the old ones.
      const ids = (await tx<{ id: string }[]>`
        select d.id from ${tx(inQueue("deliveries"))} d
         where ${counted(tx)}
           and d.last_started_at < ${before} and d.done_at < ${before}
           and not exists (select from ${tx(inQueue("actions"))} a
             where a.delivery_id = d.id)
           and not exists (select from ${tx(inQueue("mismatches"))} m
             where m.delivery_id = d.id)
           and not exists (
             select from ${tx(inQueue("supersessions"))} s
               where s.delivery_id = d.id)
         limit ${batch}
         for update skip locked`).map((r) => r.id);
      if (ids.length === 0) return 0;
      const attempts = await tx`
        delete from ${tx(inQueue("attempts"))}
          where delivery_id = any(${ids}::bigint[])`;
      const deliveries = await tx`
        delete from ${tx(inQueue("deliveries"))}
          where id = any(${ids}::bigint[])`;
      pruned.attempts += attempts.count;
      pruned.deliveries += deliveries.count;
      return ids.length;
    }));
  await untilDone(batch, () =>
    asOwner(sql, async (tx) => {
      const gone = await tx`
        delete from ${tx(inQueue("messages"))} where message_id = any(array(
          select m.message_id from ${tx(inQueue("messages"))} m
           where m.published_at < ${before}
             and not exists (
               select from ${tx(inQueue("deliveries"))} d
                 where d.message_id = m.message_id)
             and not exists (
               select from ${tx(inQueue("supersessions"))} s
                 where s.message_id = m.message_id)
           limit ${batch}
           for update skip locked))`;
      pruned.messages += gone.count;
      return gone.count;
    }));
  return pruned;
}

/** {@link pruneHistory}'s part in the subscribers' inboxes. */
export async function pruneInboxes(
  sql: Sql,
  options: RetentionOptions,
): Promise<Pruned["inboxes"]> {
  const batch = options.batch ?? 1_000;
  const before = options.before;
  const pruned: Pick<Pruned, "inboxes"> = { inboxes: {} };
  for (const subscriber of options.subscribers) {
    if (!SUBSCRIBER.test(subscriber)) {
      throw new TypeError(`not a subscriber name: ${subscriber}`);
    }
    const inbox = `${subscriber}.inbox`;
    pruned.inboxes[subscriber] = 0;
    if (options.stillOwed) {
      pruned.inboxes[subscriber] = await pruneInboxAsking(
        sql,
        inbox,
        subscriber,
        { batch, before, stillOwed: options.stillOwed },
      );
      continue;
    }
    await untilDone(batch, () =>
      asOwner(sql, async (tx) => {
        const gone = await tx`
          delete from ${tx(inbox)} where message_id = any(array(
            select i.message_id from ${tx(inbox)} i
             where i.received_at < ${before}
               and not exists (
                 select from ${tx(inQueue("deliveries"))} d
                  where d.message_id = i.message_id
                    and d.subscriber = ${subscriber}
                    and d.state in ('pending', 'in_flight', 'dead', 'held'))
             limit ${batch}
             for update skip locked))`;
        pruned.inboxes[subscriber] += gone.count;
        return gone.count;
      }));
  }
  return pruned.inboxes;
}

/**
 * Prunes one inbox whose queue is elsewhere: batch by batch in the order
 * of message ids, each batch's rows locked, the queue asked which are
 * still owed, the rest deleted. A delivery older than `before` that is
 * done stays done (only a dead one may be sent again), so the answer
 * cannot go stale while the batch is held.
 */
async function pruneInboxAsking(
  sql: Sql,
  inbox: string,
  subscriber: string,
  o: {
    batch: number;
    before: Date;
    stillOwed: NonNullable<RetentionOptions["stillOwed"]>;
  },
): Promise<number> {
  let after = "00000000-0000-0000-0000-000000000000";
  let removed = 0;
  for (;;) {
    const seen = await asOwner(sql, async (tx) => {
      const ids = (await tx<{ id: string }[]>`
        select message_id::text as id from ${tx(inbox)}
         where received_at < ${o.before} and message_id > ${after}::uuid
         order by message_id
         limit ${o.batch}
         for update skip locked`).map((r) => r.id);
      if (ids.length === 0) return 0;
      after = ids[ids.length - 1];
      const owed = await o.stillOwed(subscriber, ids);
      const gone = ids.filter((id) => !owed.has(id));
      if (gone.length > 0) {
        const deleted = await tx`
          delete from ${tx(inbox)} where message_id = any(${gone}::uuid[])`;
        removed += deleted.count;
      }
      return ids.length;
    });
    if (seen < o.batch) return removed;
  }
}

/**
 * Of `messageIds`, those with a delivery to `subscriber` in the queue of
 * `sql`'s database that a sender may still retry: open or dead. What an
 * inbox elsewhere asks each queue ({@link RetentionOptions.stillOwed}).
 */
export async function owedIn(
  sql: Sql,
  subscriber: string,
  messageIds: readonly string[],
): Promise<string[]> {
  const rows = await asOwner(sql, (tx) =>
    tx<{ id: string }[]>`
      select message_id::text as id from ${tx(inQueue("deliveries"))}
       where subscriber = ${subscriber}
         and message_id = any(${messageIds as string[]}::uuid[])
         and state in ('pending', 'in_flight', 'dead', 'held')`);
  return rows.map((r) => r.id);
}

/** Runs `pass` until it removes less than a full batch. */
async function untilDone(batch: number, pass: () => Promise<number>) {
  while (await pass() >= batch) {
    // Another batch: each is a transaction of its own.
  }
}

/**
 * Deletes every delivery to `subscriber` that the caller's transaction sees
 * (its tenant's, under row security), with their attempts and the operator
 * rows that name them, then the messages of `source` that no delivery names
 * any more. For a demonstration that starts again from nothing; production
 * history goes only by {@link pruneHistory}. Returns how many deliveries
 * went.
 */
export async function deleteSubscriberRows(
  tx: TxSql,
  subscriber: string,
  source: string,
): Promise<number> {
  const ids = tx`(select id from ${tx(inQueue("deliveries"))}
                   where subscriber = ${subscriber})`;
  for (const table of ["attempts", "actions", "mismatches"]) {
    await tx`delete from ${tx(inQueue(table))} where delivery_id in ${ids}`;
  }
  const gone = await tx`
    delete from ${tx(inQueue("deliveries"))} where subscriber = ${subscriber}`;
  await tx`
    delete from ${tx(inQueue("messages"))} m
     where m.source = ${source}
       and not exists (select from ${tx(inQueue("deliveries"))} d
                        where d.message_id = m.message_id)`;
  return gone.count;
}
