/**
 * The receivers as the console lists them: for each subscriber, its success
 * rate, last error, and its throughput and p95 latency minute by minute over
 * the last hour, read from the attempts (both transports record them alike;
 * queue.attempt_log, migrations/0014_first_try_success.sql). Attempts are found by time through their block range
 * indexes (migrations/0006_console_watch.sql, 0014_first_try_success.sql).
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { SUBSCRIBERS } from "../routing.ts";
import {
  type ReceiverMinute,
  type ReceiverStats,
  receiverStatsSchema,
} from "./contracts.ts";

export type { ReceiverMinute, ReceiverStats } from "./contracts.ts";

/** The window the receivers page and its charts cover. */
export const WINDOW_MINUTES = 60;

const statsSchema = z.array(receiverStatsSchema);

interface Row {
  subscriber: string;
  minute: Date | null;
  attempts: number;
  done: number;
  p95: number | null;
  last_error: string | null;
  last_error_at: Date | null;
}

/**
 * Every subscriber over the last hour, within the transaction's scope; one
 * that had no attempts is listed with zeros. The current minute is the last
 * of the series and still counting.
 */
export async function receiverStatsIn(sql: TxSql): Promise<ReceiverStats[]> {
  return statsOf(await readStats(sql));
}

/** What one queue says of the last hour. */
interface QueueStats {
  from: Date;
  rows: Row[];
  paused: string[];
}

async function readStats(sql: TxSql): Promise<QueueStats> {
  const [{ now }] = await sql<{ now: Date }[]>`
    select date_trunc('minute', now()) as now`;
  const from = new Date(now.getTime() - (WINDOW_MINUTES - 1) * 60_000);
  // One pass: per receiver and minute, and per receiver for the hour.
  const rows = await sql<Row[]>`
    select a.subscriber, date_trunc('minute', a.started_at) as minute,
           count(*)::int as attempts,
           count(*) filter (where a.outcome = 'done')::int as done,
           percentile_cont(0.95) within group (order by a.duration_ms)
             as p95,
           (array_agg(a.error order by a.id desc)
              filter (where a.error is not null))[1] as last_error,
           max(a.started_at) filter (where a.error is not null)
             as last_error_at
      from queue.attempt_log a
     where a.started_at >= ${from}
     group by grouping sets
       ((a.subscriber, date_trunc('minute', a.started_at)), (a.subscriber))`;
  // Paused receivers (lib/ledger/pauses.ts), of the transaction's scope.
  const paused = (await sql<{ subscriber: string }[]>`
    select subscriber from queue.pauses where paused`).map((r) => r.subscriber);
  return { from, rows, paused };
}

/**
 * Adds up what several queues say (split mode: a receiver may be sent
 * from more than one). A percentile cannot be added up: the larger p95 of
 * the queues stands for them.
 */
function mergeStats(parts: QueueStats[]): QueueStats {
  if (parts.length === 1) return parts[0];
  const rows = new Map<string, Row>();
  for (const r of parts.flatMap((p) => p.rows)) {
    const key = `${r.subscriber}/${r.minute?.getTime() ?? "hour"}`;
    const seen = rows.get(key);
    if (!seen) {
      rows.set(key, { ...r });
      continue;
    }
    seen.attempts += r.attempts;
    seen.done += r.done;
    seen.p95 = seen.p95 === null || r.p95 === null
      ? seen.p95 ?? r.p95
      : Math.max(seen.p95, r.p95);
    if (
      r.last_error_at &&
      (!seen.last_error_at || r.last_error_at > seen.last_error_at)
    ) {
      seen.last_error = r.last_error;
      seen.last_error_at = r.last_error_at;
    }
  }
  return {
    from: parts[0].from,
    rows: [...rows.values()],
    paused: [...new Set(parts.flatMap((p) => p.paused))],
  };
}

function statsOf(
  { from, rows, paused: pausedList }: QueueStats,
): ReceiverStats[] {
  const paused = new Set(pausedList);
  const hour = new Map<string, Row>();
  const minutes = new Map<string, Row>();
  for (const r of rows) {
    if (r.minute === null) hour.set(r.subscriber, r);
    else minutes.set(`${r.subscriber}/${r.minute.getTime()}`, r);
  }
  return statsSchema.parse(SUBSCRIBERS.map((name) => {
    const h = hour.get(name);
    const series: ReceiverMinute[] = [];
    for (let i = 0; i < WINDOW_MINUTES; i++) {
      const at = from.getTime() + i * 60_000;
      const m = minutes.get(`${name}/${at}`);
      series.push({
        at: new Date(at).toISOString(),
        attempts: m?.attempts ?? 0,
        done: m?.done ?? 0,
        p95LatencyMs: m?.p95 == null ? null : Math.round(m.p95),
      });
    }
    const attempts = h?.attempts ?? 0;
    const done = h?.done ?? 0;
    return {
      name,
      paused: paused.has(name),
      attempts,
      done,
      successRate: attempts ? done / attempts : null,
      lastError: h?.last_error ?? null,
      lastErrorAt: h?.last_error_at?.toISOString() ?? null,
      throughputPerMinute: done / WINDOW_MINUTES,
      p95LatencyMs: h?.p95 == null ? null : Math.round(h.p95),
      minutes: series,
    };
  }));
}

/** {@link receiverStatsIn} for one sandbox. */
export async function receiverStats(
  sql: Sql,
  sandboxId: string,
): Promise<ReceiverStats[]> {
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) => Promise.all(queues.map((q) => at(q, readStats))),
  );
  return statsOf(mergeStats(parts));
}
