/**
 * The Workers page's read model: every process of relays or consumers, from
 * the heartbeat rows lib/ writes (queue.workers, lib/ledger/workers_sql.ts),
 * live or silent. Workers are shared infrastructure, not a sandbox's:
 * every signed-in operator sees all of them, read-only (the table has no
 * tenant policy; the read runs in the operator's sandbox like every other
 * console read, and sees the same rows from each). In split mode each
 * sender's queue has its own heartbeats, so one process is listed once per
 * sender it serves, by the owner id it uses there.
 */
import type { Sql } from "../../lib/db/connect.ts";
import {
  mergeWorkers,
  readWorkers,
  type WorkerRow,
} from "../../lib/ledger/mod.ts";
import { readServices } from "../databases.ts";
import {
  type Worker,
  type WorkersData,
  workersDataSchema,
} from "./contracts.ts";

export type { WorkerRow } from "../../lib/ledger/mod.ts";

/** Every heartbeat row of every queue's database, as read now. */
export async function workerRows(
  sql: Sql,
  sandboxId: string,
): Promise<WorkerRow[]> {
  return await readServices(sql, sandboxId, async (at, queues) => {
    const parts = await Promise.all(queues.map((q) => at(q, readWorkers)));
    return mergeWorkers(parts.flat());
  });
}

/** One row as the twin sends it. */
export function workerView(row: WorkerRow): Worker {
  return {
    id: row.id,
    host: row.host,
    pid: row.pid,
    roles: row.roles,
    transport: row.transport,
    state: row.state,
    leases: row.leases,
    lastClaimAt: row.lastClaimAt?.toISOString() ?? null,
    lastBeatAt: row.lastBeatAt.toISOString(),
    version: row.version,
  };
}

/** `GET /api/console/workers` and the Workers page. */
export async function workersData(
  sql: Sql,
  sandboxId: string,
): Promise<WorkersData> {
  const rows = await workerRows(sql, sandboxId);
  return workersDataSchema.parse({ items: rows.map(workerView) });
}
