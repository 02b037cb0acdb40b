/**
 * Outbox ages for the console: how much each sender still owes and how old
 * the oldest promise is. Age, not just count: one old message matters more
 * than a burst of new ones. Rows that wait for a scheduled retry are counted
 * apart from rows that are ready now, so a backing-off row does not raise
 * the "oldest ready" age; rows parked by the relay's loop guard are counted
 * and listed on their own, since only a command or an operator moves them.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { SENDERS } from "../routing.ts";
import { type OutboxAges, outboxAgesSchema } from "./contracts.ts";

/** Histogram bucket bounds, in seconds (the last is +Inf). */
export const AGE_BUCKETS = [
  1,
  5,
  30,
  60,
  300,
  1800,
  3600,
  21600,
  86400,
] as const;

export type { OutboxAges } from "./contracts.ts";

interface Group {
  service: string;
  type: string;
  pending: number;
  ready: number;
  parked: number;
  oldest_ready: number | null;
  oldest: number | null;
}

interface Row {
  service: string;
  message_id: string;
  type: string;
  order_id: string;
  state: string;
  age: number;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  ready: boolean;
}

interface ParkedRow {
  service: string;
  message_id: string;
  type: string;
  order_id: string;
  age: number;
  attempts: number;
  last_error: string | null;
}

/**
 * Pending outbox rows of one sandbox, summarised by the server (counts, ages
 * and histogram per service and type) plus the `limit` oldest rows, and the
 * `limit` oldest parked rows: the backlog is never copied into this process.
 */
export async function outboxAges(
  sql: Sql,
  sandboxId: string,
  limit = 50,
): Promise<OutboxAges> {
  const bounds = [...AGE_BUCKETS];
  const buckets = new Array<number>(bounds.length + 1).fill(0);
  const { groups, oldest, parked } = await readServices(
    sql,
    sandboxId,
    async (at) => {
      // Per sender three statements, all six sent at once: one scan of the
      // pending rows grouped by type and age bucket (folded per type here),
      // the oldest rows (the outbox holds only what is owed), and the oldest parked
      // rows through the retry index (parked rows are among those that
      // wait: pending, attempted), which a burst of new rows cannot crowd
      // out of the list as it can out of the oldest. Each sender's outbox
      // is read in its own database.
      const read = await Promise.all(
        SENDERS.map((service) =>
          at(service, (sql) => {
            const table = sql(`${service}.outbox`);
            return Promise.all([
              sql<(Group & { b: number })[]>`
          with p as (
            select type, next_attempt_at,
                   date_part('epoch', now() - created_at) as age
              from ${table}
          )
          select ${service}::text as service, type,
                 -- width_bucket: 0 below the first bound, i in
                 -- [bound i-1, bound i), n past the last bound (+Inf).
                 width_bucket(age, ${bounds}::float8[]) as b,
                 count(*)::int as pending,
                 count(*) filter (where next_attempt_at <= now())::int as ready,
                 count(*) filter (where next_attempt_at = 'infinity')::int as parked,
                 max(age) filter (where next_attempt_at <= now()) as oldest_ready,
                 max(age) as oldest
            from p group by type, b`,
              sql<Row[]>`
          select ${service}::text as service, message_id, type,
                 envelope->>'aggregateId' as order_id, state,
                 date_part('epoch', now() - created_at) as age,
                 attempts, last_error, next_attempt_at,
                 next_attempt_at <= now() as ready
            from ${table}
           order by id limit ${limit}`,
              sql<ParkedRow[]>`
          select ${service}::text as service, message_id, type,
                 envelope->>'aggregateId' as order_id,
                 date_part('epoch', now() - created_at) as age,
                 attempts, last_error
            from ${table}
           where state = 'pending' and attempts > 0
             and next_attempt_at = 'infinity'
           order by id limit ${limit}`,
            ]);
          })
        ),
      );
      const groups = new Map<string, Group>();
      const later = (a: number | null, b: number | null) =>
        a === null ? b : b === null ? a : Math.max(a, b);
      for (const [cells] of read) {
        for (const { b, ...cell } of cells) {
          buckets[b] += cell.pending;
          const key = `${cell.service}\u0000${cell.type}`;
          const g = groups.get(key);
          if (!g) {
            groups.set(key, cell);
            continue;
          }
          g.pending += cell.pending;
          g.ready += cell.ready;
          g.parked += cell.parked;
          g.oldest_ready = later(g.oldest_ready, cell.oldest_ready);
          g.oldest = later(g.oldest, cell.oldest);
        }
      }
      return {
        groups: [...groups.values()],
        oldest: read.flatMap(([, rows]) => rows),
        parked: read.flatMap(([, , rows]) => rows),
      };
    },
  );
  const sum = (f: (g: Group) => number) => groups.reduce((n, g) => n + f(g), 0);
  const max = (values: (number | null)[]) => {
    const v = values.filter((x): x is number => x !== null);
    return v.length ? Math.max(...v) : null;
  };
  const pending = sum((g) => g.pending);
  const ready = sum((g) => g.ready);
  return outboxAgesSchema.parse({
    pending,
    ready,
    backingOff: pending - ready,
    parked: sum((g) => g.parked),
    oldestReadyAgeSeconds: max(groups.map((g) => g.oldest_ready)),
    oldestAgeSeconds: max(groups.map((g) => g.oldest)),
    buckets: [...AGE_BUCKETS, "+Inf" as const].map((le, i) => ({
      le,
      count: buckets[i],
    })),
    byService: groups.map((g) => ({
      service: g.service,
      eventType: g.type,
      pending: g.pending,
      ready: g.ready,
      backingOff: g.pending - g.ready,
      parked: g.parked,
      oldestReadyAgeSeconds: g.oldest_ready,
      oldestAgeSeconds: g.oldest,
    })),
    oldest: oldest.sort((a, b) => b.age - a.age).slice(0, limit).map((r) => ({
      messageId: r.message_id,
      service: r.service,
      eventType: r.type,
      orderId: r.order_id,
      state: r.state,
      ageSeconds: Math.round(r.age * 10) / 10,
      attempts: r.attempts,
      lastError: r.last_error,
      nextAttemptAt: isFinite(r.next_attempt_at.getTime())
        ? r.next_attempt_at.toISOString()
        : null,
      ready: r.ready,
    })),
    parkedRows: parked.sort((a, b) => b.age - a.age).slice(0, limit).map((
      r,
    ) => ({
      messageId: r.message_id,
      service: r.service,
      eventType: r.type,
      orderId: r.order_id,
      ageSeconds: Math.round(r.age * 10) / 10,
      attempts: r.attempts,
      lastError: r.last_error,
    })),
  });
}
