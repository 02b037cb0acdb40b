/**
 * The workers' alerts, beside the others of services/console/alerts.ts
 * and read from the same snapshot. /metrics exports the same figures
 * (services/metrics.ts):
 *
 * | kind             | subject          | fires when                                             |
 * | ---------------- | ---------------- | ------------------------------------------------------ |
 * | `no_live_worker` | `relay`/`consume`| work of that role waits and no live worker has the role |
 * | `silent_worker`  | worker id        | silent past three beats while its leases still hold     |
 *
 * Work that waits is, for the relay, an outbox row due now; for the
 * consumers, a pending delivery due now. A silent worker's alert clears
 * once its last lease expires, when another worker takes its rows over;
 * its row stays, silent, until a hundred beats have passed
 * (lib/ledger/workers_sql.ts), or leaves at once if it comes back and
 * stops cleanly.
 */
import type { TxSql } from "../../lib/db/connect.ts";
import {
  mergeWorkers,
  readWorkers,
  SILENT_AFTER_BEATS,
  type WorkerRow,
} from "../../lib/ledger/mod.ts";
import type { ReadAt } from "../databases.ts";
import { SENDERS } from "../routing.ts";
import type { Alert } from "./contracts.ts";

/** Work of one role that waits now, and since when the oldest is due. */
export interface Waiting {
  role: "relay" | "consume";
  n: number;
  oldestDueAt: Date | null;
}

/** Outbox rows of `service` due now. */
async function dueOutbox(sql: TxSql, service: string) {
  const [r] = await sql<{ n: number; oldest: Date | null }[]>`
    select count(*)::int as n, min(next_attempt_at) as oldest
      from ${sql(`${service}.outbox`)}
     where next_attempt_at <= now()`;
  return r;
}

/** Pending deliveries of one queue due now. */
async function dueDeliveries(sql: TxSql) {
  const [r] = await sql<{ n: number; oldest: Date | null }[]>`
    select count(*)::int as n, min(next_attempt_at) as oldest
      from queue.deliveries
     where state = 'pending' and next_attempt_at <= now()`;
  return r;
}

function added(
  role: Waiting["role"],
  parts: { n: number; oldest: Date | null }[],
): Waiting {
  const dues = parts.flatMap((p) => p.oldest ? [p.oldest] : []);
  return {
    role,
    n: parts.reduce((sum, p) => sum + p.n, 0),
    oldestDueAt: dues.length ? new Date(Math.min(...dues.map(Number))) : null,
  };
}

/** The workers and the work that waits, as `at` reads them. */
export async function readWorkerState(
  at: ReadAt,
  queues: readonly string[],
): Promise<{ workers: WorkerRow[]; waiting: Waiting[] }> {
  const [workers, outbox, deliveries] = await Promise.all([
    Promise.all(queues.map((q) => at(q, readWorkers))),
    Promise.all(SENDERS.map((s) => at(s, (sql) => dueOutbox(sql, s)))),
    Promise.all(queues.map((q) => at(q, dueDeliveries))),
  ]);
  return {
    workers: mergeWorkers(workers.flat()),
    waiting: [added("relay", outbox), added("consume", deliveries)],
  };
}

/** The alerts of these workers and this waiting work, judged now. */
export function workerAlertsOf(
  workers: readonly WorkerRow[],
  waiting: readonly Waiting[],
): Alert[] {
  const alerts: Alert[] = [];
  for (const w of waiting) {
    const serving = workers.filter((x) => x.roles.includes(w.role));
    if (w.n === 0 || serving.some((x) => x.state === "live")) continue;
    // Since the work was due, or since the last worker went silent.
    const times = [
      w.oldestDueAt,
      ...serving.map((x) => x.silentSince),
    ].flatMap((d) => d ? [d.getTime()] : []);
    alerts.push({
      kind: "no_live_worker",
      subject: w.role,
      value: w.n,
      threshold: 1,
      since: new Date(Math.max(...times)).toISOString(),
    });
  }
  for (const x of workers) {
    if (x.state !== "silent" || x.leases === 0 || !x.silentSince) continue;
    alerts.push({
      kind: "silent_worker",
      subject: x.id,
      value: Math.max(0, Math.round((Date.now() - +x.lastBeatAt) / 100) / 10),
      threshold: (SILENT_AFTER_BEATS * x.beatMs) / 1000,
      since: x.silentSince.toISOString(),
    });
  }
  return alerts;
}

/** The workers' alerts, for services/console/alerts.ts. */
export async function workerAlerts(
  at: ReadAt,
  queues: readonly string[],
): Promise<Alert[]> {
  const { workers, waiting } = await readWorkerState(at, queues);
  return workerAlertsOf(workers, waiting);
}
