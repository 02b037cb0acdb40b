/**
 * What the scenarios read of the rows, and how they wait for them: counts
 * with the superuser pool, waits on a condition (never a fixed sleep), and
 * a consumer's claim taken by hand.
 */
import type { Sql } from "../../db/connect.ts";
import { poolOf } from "../../db/service.ts";
import type { ClaimedDelivery } from "../../ledger/mod.ts";
import { claimBatch } from "../../ledger/deliveries_sql.ts";
import { RECEIVERS } from "./services.ts";

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * Counts rows with the superuser pool (no RLS), in the database of the
 * table's schema: a service's own when `sql` routes it to one
 * (lib/db/service.ts).
 */
export async function count(
  sql: Sql,
  table: string,
  where = sql`true`,
): Promise<number> {
  const at = poolOf(sql, table.split(".")[0]);
  const [row] = await at<{ n: number }[]>`
    select count(*)::int as n from ${at(table)} where ${where}`;
  return row.n;
}

/** Waits until every test receiver holds `jobs` jobs. */
export async function waitForJobs(sql: Sql, jobs: number, timeoutMs?: number) {
  await waitFor(`${jobs} job(s) at every receiver`, async () => {
    for (const r of RECEIVERS) {
      if (await count(sql, `${r}.jobs`) !== jobs) return false;
    }
    return true;
  }, timeoutMs);
}

/** Waits until `n` deliveries are in `state`. */
export async function waitForDeliveries(
  sql: Sql,
  state: string,
  n: number,
  timeoutMs?: number,
) {
  await waitFor(
    `${n} deliveries ${state}`,
    async () =>
      await count(sql, "queue.deliveries", sql`state = ${state}`) === n,
    timeoutMs,
  );
}

/**
 * One claim of up to `limit` deliveries by `owner`, holding nothing else
 * (claimBatch with an empty share), as a consumer's first claim is.
 */
export async function claimDeliveries(
  sql: Sql,
  owner: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  return (await claimBatch(sql, owner, {
    limit,
    leaseMs,
    round: {
      after: null,
      perTenant: limit,
    },
  })).claimed;
}
