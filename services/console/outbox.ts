/**
 * Outbox ages for the console: how much each sender still owes and how old
 * the oldest promise is. Age, not just count: one old message matters more
 * than a burst of new ones. Rows that wait for a scheduled retry are counted
 * apart from rows that are ready now, so a backing-off row does not raise
 * the "oldest ready" age.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { SENDERS } from "../routing.ts";

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

export interface OutboxAges {
  pending: number;
  ready: number;
  backingOff: number;
  /** Rows parked by the loop guard (waiting for a command or an operator). */
  parked: number;
  oldestReadyAgeSeconds: number | null;
  oldestAgeSeconds: number | null;
  buckets: { le: number | "+Inf"; count: number }[];
  byService: {
    service: string;
    eventType: string;
    pending: number;
    ready: number;
    backingOff: number;
    oldestReadyAgeSeconds: number | null;
    oldestAgeSeconds: number | null;
  }[];
  oldest: {
    messageId: string;
    service: string;
    eventType: string;
    orderId: string;
    state: string;
    ageSeconds: number;
    attempts: number;
    lastError: string | null;
    nextAttemptAt: string | null;
    ready: boolean;
  }[];
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

/** Pending outbox rows of one sandbox, summarised. */
export async function outboxAges(
  sql: Sql,
  sandboxId: string,
  limit = 50,
): Promise<OutboxAges> {
  const rows = await asService(
    sql,
    "console",
    { sandboxId },
    async ({ sql }) => {
      const all: Row[] = [];
      for (const service of SENDERS) {
        all.push(
          ...await sql<Row[]>`
          select ${service}::text as service, message_id, type,
                 envelope->>'aggregateId' as order_id, state,
                 extract(epoch from now() - created_at)::float8 as age,
                 attempts, last_error, next_attempt_at,
                 next_attempt_at <= now() as ready
            from ${sql(`${service}.outbox`)}
           where state <> 'published'
           order by id`,
        );
      }
      return all;
    },
  );
  const ready = rows.filter((r) => r.ready);
  const parked = rows.filter((r) => !isFinite(r.next_attempt_at.getTime()));
  const maxAge = (rs: Row[]) =>
    rs.length ? Math.max(...rs.map((r) => r.age)) : null;
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = `${r.service}\u0000${r.type}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return {
    pending: rows.length,
    ready: ready.length,
    backingOff: rows.length - ready.length,
    parked: parked.length,
    oldestReadyAgeSeconds: maxAge(ready),
    oldestAgeSeconds: maxAge(rows),
    buckets: [...AGE_BUCKETS, "+Inf" as const].map((le, i) => ({
      le,
      count: rows.filter((r) =>
        r.age <= (le === "+Inf" ? Infinity : le) &&
        (i === 0 || r.age > AGE_BUCKETS[i - 1])
      ).length,
    })),
    byService: [...groups.values()].map((g) => {
      const gr = g.filter((r) => r.ready);
      return {
        service: g[0].service,
        eventType: g[0].type,
        pending: g.length,
        ready: gr.length,
        backingOff: g.length - gr.length,
        oldestReadyAgeSeconds: maxAge(gr),
        oldestAgeSeconds: maxAge(g),
      };
    }),
    oldest: [...rows].sort((a, b) => b.age - a.age).slice(0, limit).map((
      r,
    ) => ({
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
  };
}
