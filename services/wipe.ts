/**
 * The daily sandbox wipe: at 10:00 UTC every sandbox created before that
 * moment loses its rows in every service, its sessions and its fault
 * switches; the sandbox row stays, marked wiped. A schedule every 15 minutes
 * runs a wipe that is due and retries one that did not finish. This is the
 * only code that deletes messaging rows (dead letters included).
 */
import type { Sql } from "../lib/db/connect.ts";
import { asOwner } from "../lib/db/service.ts";
import type { Logger } from "../lib/log/mod.ts";

/** The wipe boundary at or before `now`: 10:00 UTC today or yesterday. */
export function cutoffFor(now: Date): Date {
  const today = new Date(
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), 10),
  );
  return now >= today ? today : new Date(today.getTime() - 86_400_000);
}

/** Children before parents, so foreign keys never stop a delete. */
const FIRST = [
  "queue.attempts",
  "queue.actions",
  "queue.mismatches",
  "queue.supersessions",
  "queue.deliveries",
  "queue.messages",
  "orders.lines",
  "orders.events",
];

/** One advisory lock: one wipe at a time across processes. */
const LOCK_KEY = 7_316_024_002;

export interface WipeResult {
  cutoff: Date;
  ran: boolean;
  sandboxes: number;
  rowsDeleted: number;
}

/**
 * Runs the wipe for the boundary at or before `now`, unless it finished
 * already or another process is running it. All in one transaction: a wipe
 * that fails leaves every row as it was, and is retried.
 */
export async function wipeDue(
  sql: Sql,
  log: Logger,
  now = new Date(),
): Promise<WipeResult> {
  const cutoff = cutoffFor(now);
  const idle = { cutoff, ran: false, sandboxes: 0, rowsDeleted: 0 };
  const [done] = await sql`select 1 from platform.wipes
    where cutoff = ${cutoff} and finished_at is not null`;
  if (done) return idle;
  try {
    return await asOwner(sql, async (tx) => {
      const [{ locked }] =
        await tx`select pg_try_advisory_xact_lock(${LOCK_KEY}) as locked`;
      if (!locked) return idle;
      const ids = (await tx<{ id: string }[]>`
        select id from platform.sandboxes
         where created_at < ${cutoff} and wiped_at is null`).map((r) => r.id);
      const tables = await tx<{ t: string }[]>`
        select format('%I.%I', c.table_schema, c.table_name) as t
          from information_schema.columns c
          join information_schema.tables t using (table_schema, table_name)
         where c.column_name = 'sandbox_id' and t.table_type = 'BASE TABLE'
           and c.table_schema not in ('pg_catalog', 'information_schema')
           and c.table_name not in ('sandboxes', 'sessions')`;
      const ordered = [
        ...FIRST,
        ...tables.map((r) => r.t).filter((t) => !FIRST.includes(t)),
      ];
      let rowsDeleted = 0;
      if (ids.length > 0) {
        for (const table of ordered) {
          const [schema, name] = table.split(".");
          const deleted = await tx`
            delete from ${
            tx(`${schema}.${name}`)
          } where sandbox_id = any(${ids}::uuid[])`;
          rowsDeleted += deleted.count;
        }
        await tx`update platform.sessions set ended_at = now()
                  where sandbox_id = any(${ids}::uuid[]) and ended_at is null`;
        await tx`update platform.sandboxes set wiped_at = now() where id = any(${ids}::uuid[])`;
      }
      await tx`
        insert into platform.wipes (cutoff, finished_at, sandboxes, rows_deleted)
        values (${cutoff}, now(), ${ids.length}, ${rowsDeleted})
        on conflict (cutoff) do update set finished_at = now(), error = null,
          sandboxes = excluded.sandboxes, rows_deleted = excluded.rows_deleted`;
      log.info("sandbox_wipe", { cutoff, sandboxes: ids.length, rowsDeleted });
      return { cutoff, ran: true, sandboxes: ids.length, rowsDeleted };
    });
  } catch (error) {
    // Keep the failure visible; the next run of the schedule tries again.
    await sql`
      insert into platform.wipes (cutoff, error) values (${cutoff}, ${
      (error as Error).message
    })
      on conflict (cutoff) do update set error = excluded.error`;
    log.error("sandbox_wipe_failed", { cutoff, error });
    throw error;
  }
}

/**
 * Every 15 minutes: run the wipe that is due. Returns the stop function,
 * which waits for a wipe in progress.
 */
export function scheduleWipes(
  sql: Sql,
  log: Logger,
  everyMs = 15 * 60_000,
): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = wipeDue(sql, log).catch(() => {});
  };
  const timer = setInterval(run, everyMs);
  const first = setTimeout(run, 1000);
  return async () => {
    clearInterval(timer);
    clearTimeout(first);
    await running;
  };
}
