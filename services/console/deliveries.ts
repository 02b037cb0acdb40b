/**
 * Deliveries and dead letters for the console: lists by state, one
 * delivery's attempt history and operator actions, and the dead letter list
 * with its filters (receiver, event type, time window), oldest first.
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { queueOfDelivery, readServices } from "../databases.ts";
import { bySubscriber, earlier, later } from "./by_subscriber.ts";
import { SUBSCRIBERS } from "../routing.ts";
import { beyond, type DeliveryState, uncounted } from "../../lib/ledger/mod.ts";
import {
  type DeadLetterSummary,
  deadLetterSummarySchema,
  type DeliveryCounts,
  deliveryCountsSchema,
  type DeliveryDetailData,
  deliveryDetailDataSchema,
  type DeliveryItem,
  deliveryItemSchema,
  type ReceiverHealth,
  receiverHealthSchema,
} from "./contracts.ts";

export type { DeliveryItem } from "./contracts.ts";

/** The columns of queue.deliveries that the console reads. */
interface DeliveryRow {
  id: string | number;
  message_id: string;
  type: string;
  subscriber: string;
  aggregate_id: string;
  state: DeliveryState;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date;
  created_at: Date;
  dead_at: Date | null;
  redrives: number;
  refused_reason: string | null;
  refused_by: string | null;
  refused_at: Date | null;
  held_behind: string | number | null;
  /** Selected when the list asks for the replay horizon. */
  beyond_horizon?: boolean;
}

const itemsSchema = z.array(deliveryItemSchema);

/** A row in the contract's shape; parsed by the caller, once per answer. */
function item(d: DeliveryRow): DeliveryItem {
  const open = d.state === "pending" || d.state === "in_flight";
  return {
    id: Number(d.id),
    messageId: d.message_id,
    eventType: d.type,
    subscriber: d.subscriber,
    orderId: d.aggregate_id,
    state: d.state,
    attempts: d.attempts,
    lastStatus: d.last_status,
    lastError: d.last_error,
    nextAttemptAt: open ? d.next_attempt_at.toISOString() : null,
    createdAt: d.created_at.toISOString(),
    deadAt: d.dead_at?.toISOString() ?? null,
    redrives: d.redrives,
    refusedReason: d.refused_reason,
    refusedBy: d.refused_by,
    refusedAt: d.refused_at?.toISOString() ?? null,
    beyondReplayHorizon: d.state === "dead" && d.beyond_horizon === true,
    heldBehind: d.held_behind === null ? null : Number(d.held_behind),
  };
}

export interface DeliveryFilter {
  /** "retrying" is pending with at least one attempt behind it. */
  state?: DeliveryState | "retrying";
  subscriber?: string;
  eventType?: string;
  orderId?: string;
  since?: Date;
  until?: Date;
  limit?: number;
  /** A failure group's key (lib/ledger/dead_letters.ts). */
  group?: string;
  /** The replay horizon in days: dead letters beyond it are marked. */
  horizonDays?: number;
}

/**
 * Deliveries of one sandbox, newest first (dead letters: oldest first).
 * Open, dead and refused ones are few and each state has a partial index;
 * done ones are history, found through this sandbox's newest messages
 * (queue.messages_by_sandbox, migrations/0003_queue.sql).
 */
export async function listDeliveries(
  sql: Sql,
  sandboxId: string,
  f: DeliveryFilter = {},
): Promise<DeliveryItem[]> {
  const limit = Math.min(f.limit ?? 200, 1000);
  const dead = f.state === "dead";
  // Each queue's first `limit`, merged in the same order (split mode: one
  // queue per sender, each in its own database).
  const rows = await readServices(sql, sandboxId, async (at, queues) => {
    const parts = [];
    for (const queue of queues) {
      parts.push(
        ...await at(queue, (sql) => deliveriesIn(sql, sandboxId, f, limit)),
      );
    }
    if (queues.length > 1) {
      parts.sort((a, b) =>
        dead
          ? +a.merge_at - +b.merge_at || Number(a.id) - Number(b.id)
          : +b.merge_at - +a.merge_at || Number(b.id) - Number(a.id)
      );
    }
    return parts.slice(0, limit);
  });
  return itemsSchema.parse(rows.map(item));
}

/** One queue's part of the list, ordered as the list is. */
function deliveriesIn(
  sql: TxSql,
  sandboxId: string,
  f: DeliveryFilter,
  limit: number,
) {
  const history = f.state === undefined || f.state === "done";
  const dead = f.state === "dead";
  return sql<(DeliveryRow & { merge_at: Date })[]>`
    select d.*, ${
    dead ? sql`d.dead_at` : history ? sql`m.published_at` : sql`d.created_at`
  } as merge_at${
    f.horizonDays === undefined
      ? sql``
      : sql`, ${beyond(sql, f.horizonDays, "d")} as beyond_horizon`
  } from queue.deliveries d
    ${
    history
      ? sql`join queue.messages m on m.message_id = d.message_id
             where m.tenant_id = ${sandboxId}`
      : sql`where true`
  }
     ${
    f.state === "retrying"
      ? sql`and d.state = 'pending' and d.attempts > 0`
      : f.state
      ? sql`and d.state = ${f.state}`
      : sql``
  }
     ${f.subscriber ? sql`and d.subscriber = ${f.subscriber}` : sql``}
     ${f.eventType ? sql`and d.type = ${f.eventType}` : sql``}
     ${
    f.group
      ? sql`and queue.failure_group(d.subscriber, d.type, d.last_error) = ${f.group}`
      : sql``
  }
     ${
    f.orderId
      ? sql`and d.message_id in (select message_id from queue.messages
                                  where aggregate_id = ${f.orderId})`
      : sql``
  }
     ${
    f.since ? sql`and coalesce(d.dead_at, d.created_at) >= ${f.since}` : sql``
  }
     ${
    f.until ? sql`and coalesce(d.dead_at, d.created_at) < ${f.until}` : sql``
  }
     ${
    f.state === "dead"
      ? sql`order by d.dead_at, d.id`
      : history
      ? sql`order by m.published_at desc, d.id desc`
      : sql`order by d.id desc`
  }
     limit ${limit}`;
}

/** A count of deliveries in one state to one subscriber. */
export interface DeliveryTally {
  state: DeliveryState;
  subscriber: string;
  n: number;
  /** Of those, pending with at least one attempt behind them. */
  retrying: number;
}

/**
 * Deliveries by state and subscriber, within the transaction's scope,
 * without reading history: open, dead and refused deliveries through their
 * partial indexes; done ones are the closure audit's counters plus the few
 * not counted yet. For the deliveries page's tabs and for /metrics.
 */
export async function tallyDeliveries(sql: TxSql): Promise<DeliveryTally[]> {
  return await sql<DeliveryTally[]>`
    select state, subscriber, sum(n)::int as n, sum(retrying)::int as retrying
      from (
      select state, subscriber, count(*) as n,
             count(*) filter (where state = 'pending' and attempts > 0) as retrying
        from queue.deliveries where state in ('pending', 'in_flight')
       group by 1, 2
      union all
      select 'held', subscriber, count(*), 0 from queue.deliveries
       where state = 'held' group by 2
      union all
      select 'dead', subscriber, count(*), 0 from queue.deliveries
       where state = 'dead' group by 2
      union all
      select 'refused', subscriber, count(*), 0 from queue.deliveries
       where state = 'refused' group by 2
      union all
      ${
    SUBSCRIBERS.map((s) =>
      sql`select 'done', ${s}::text, count(*), 0 from queue.deliveries d
           where ${uncounted(sql, s)} having count(*) > 0`
    ).reduce((all, one) => sql`${all} union all ${one}`)
  }
      union all
      select 'done', subscriber, sum(closed + mismatch), 0
        from queue.closure_counts group by 2
    ) c group by 1, 2`;
}

/** Counts by state, for the tabs of the deliveries page. */
export async function deliveryCounts(
  sql: Sql,
  sandboxId: string,
): Promise<DeliveryCounts> {
  const rows = await readServices(
    sql,
    sandboxId,
    async (at, queues) =>
      (await Promise.all(queues.map((q) => at(q, tallyDeliveries)))).flat(),
  );
  const counts: Record<string, number> = {
    pending: 0,
    retrying: 0,
    in_flight: 0,
    done: 0,
    dead: 0,
    refused: 0,
    held: 0,
  };
  for (const r of rows) {
    counts[r.state] += r.n;
    counts.retrying += r.retrying;
  }
  return deliveryCountsSchema.parse(counts);
}

/** One delivery with every attempt and every operator action; null if none. */
export async function deliveryDetail(
  sql: Sql,
  sandboxId: string,
  id: number,
): Promise<DeliveryDetailData | null> {
  // In split mode the id names its queue (services/databases.ts).
  return await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      at(queueOfDelivery(id) ?? queues[0], async (sql) => {
        const [d] = await sql<
          DeliveryRow[]
        >`select * from queue.deliveries where id = ${id}`;
        if (!d) return null;
        // A first-try success has no attempt row: the log derives it.
        const attempts = await sql<{
          attempt: number;
          started_at: Date;
          duration_ms: number;
          status: number | null;
          outcome: string;
          error: string | null;
        }[]>`
      select attempt, started_at, duration_ms, status, outcome, error
        from queue.attempt_log where delivery_id = ${id}
       order by attempt, started_at`;
        const actions = await sql<{
          action: string;
          actor: string;
          reason: string | null;
          at: Date;
        }[]>`
      select action, actor, reason, at from queue.actions
       where delivery_id = ${id} order by id`;
        const [message] = await sql<{ envelope: unknown }[]>`
      select envelope from queue.messages where message_id = ${d.message_id}`;
        // The supersede link, either way: this dead letter's corrected copy, or
        // the dead letter this delivery's message corrects.
        const [by] = await sql<{
          message_id: string;
          actor: string;
          reason: string;
          at: Date;
          delivery_id: string | null;
        }[]>`
      select s.message_id, s.actor, s.reason, s.at,
             (select min(c.id) from queue.deliveries c
               where c.message_id = s.message_id) as delivery_id
        from queue.supersessions s where s.delivery_id = ${id}`;
        const [of] = await sql<{ delivery_id: string }[]>`
      select delivery_id from queue.supersessions
       where message_id = ${d.message_id}`;
        return deliveryDetailDataSchema.parse({
          delivery: item(d),
          envelope: message?.envelope ?? null,
          supersededBy: by
            ? {
              messageId: by.message_id,
              deliveryId: by.delivery_id === null
                ? null
                : Number(by.delivery_id),
              actor: by.actor,
              reason: by.reason,
              at: by.at.toISOString(),
            }
            : null,
          supersedes: of ? Number(of.delivery_id) : null,
          attempts: attempts.map((a) => ({
            attempt: a.attempt,
            startedAt: a.started_at.toISOString(),
            durationMs: a.duration_ms,
            status: a.status,
            outcome: a.outcome,
            error: a.error,
          })),
          actions: actions.map((a) => ({
            action: a.action,
            actor: a.actor,
            reason: a.reason,
            at: a.at.toISOString(),
          })),
        });
      }),
  );
}

const summariesSchema = z.array(deadLetterSummarySchema);
const healthSchema = z.array(receiverHealthSchema);

/** Dead letters per receiver, for the overview. */
export async function deadLettersBySubscriber(
  sql: Sql,
  sandboxId: string,
): Promise<DeadLetterSummary[]> {
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(
        queues.map((q) =>
          at(q, (sql) =>
            sql<{ subscriber: string; n: number; oldest: Date }[]>`
        select subscriber, count(*)::int as n, min(dead_at) as oldest
          from queue.deliveries where state = 'dead' group by subscriber`)
        ),
      ),
  );
  const rows = bySubscriber(parts, (a, b) => ({
    subscriber: a.subscriber,
    n: a.n + b.n,
    oldest: earlier(a.oldest, b.oldest)!,
  }));
  return summariesSchema.parse(rows.map((r) => ({
    subscriber: r.subscriber,
    count: r.n,
    oldestDeadAt: r.oldest.toISOString(),
  })));
}

/** Success rate and last error per receiver over the last `minutes`. */
export async function receiverHealth(
  sql: Sql,
  sandboxId: string,
  minutes = 15,
): Promise<ReceiverHealth[]> {
  type Health = {
    subscriber: string;
    total: number;
    ok: number;
    last_error: string | null;
    last_at: Date;
    last_error_at: Date | null;
  };
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(queues.map((q) =>
        at(q, (sql) =>
          sql<Health[]>`
        select a.subscriber, count(*)::int as total,
               count(*) filter (where a.outcome = 'done')::int as ok,
               (array_agg(a.error order by a.id desc) filter (where a.error is not null))[1] as last_error,
               max(a.started_at) as last_at,
               max(a.started_at) filter (where a.error is not null)
                 as last_error_at
          from queue.attempt_log a
         where a.started_at > now() - ${minutes} * interval '1 minute'
         group by a.subscriber order by a.subscriber`)
      )),
  );
  // Each queue's attempts added up; the last error is the newest of them.
  const rows = bySubscriber(parts, (a, b) => {
    const newer = later(a.last_error_at, b.last_error_at) === b.last_error_at;
    return {
      subscriber: a.subscriber,
      total: a.total + b.total,
      ok: a.ok + b.ok,
      last_at: later(a.last_at, b.last_at)!,
      last_error: newer ? b.last_error : a.last_error,
      last_error_at: later(a.last_error_at, b.last_error_at),
    };
  });
  return healthSchema.parse(rows.map((r) => ({
    subscriber: r.subscriber,
    attempts: r.total,
    successRate: r.total ? r.ok / r.total : null,
    lastError: r.last_error,
    lastAttemptAt: r.last_at.toISOString(),
  })));
}
