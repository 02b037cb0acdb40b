/**
 * The daily sandbox wipe: at 10:00 UTC, by the database's clock, every
 * sandbox created before that moment loses its rows in every service, its
 * fault switches and what the transport holds of it; its sessions end. The
 * sandbox row stays, marked wiped, with the refusals of whatever came for
 * it afterwards (`platform.closed_refusals`). A schedule every 15 minutes
 * runs a wipe that is due and finishes one that did not. This is the only
 * code that deletes messaging rows (dead letters included).
 *
 * Deleting while a sandbox still works leaves rows behind: each DELETE sees
 * only what had committed when it began, and the relay, the consumers and
 * the receivers go on (an OrderPaid written by a PaymentSucceeded in
 * flight). So a sandbox goes open -> wiping -> wiped
 * (migrations/0011_sandbox_wipe.sql), in four steps:
 *
 * 1. Close (open -> wiping): `wiping_at` set and its sessions ended, in one
 *    statement, committed. From then on the sandbox's service transactions
 *    are refused as they begin (lib/db/service.ts), the relay's and the
 *    consumers' claims leave its rows, and what arrives for it is refused
 *    with a row that says why.
 * 2. Fence: wait until every transaction that was running when the close
 *    committed has ended (it may have passed the gate just before), and
 *    every lease of the relay on the sandbox's outbox rows (a publish on
 *    its way to the broker). Nothing of the sandbox is written after.
 * 3. Forget: the transport drops what it holds of it (JetStream: its
 *    messages purged from the stream, its lanes deleted).
 * 4. Delete (wiping -> wiped): every row of it, in one transaction that
 *    marks it wiped.
 *
 * A wipe that fails after step 1 leaves its sandboxes wiping, closed, and
 * the next run (due while any sandbox is wiping) takes them up again. The
 * other sandboxes pay nothing: the gate is one look at a primary key in a
 * statement every transaction sends anyway, and the claims' look at the
 * sandboxes being wiped is one per statement, at an index usually empty.
 */
import type { Sql, TxSql } from "../lib/db/connect.ts";
import { asOwner } from "../lib/db/service.ts";
import type { Logger } from "../lib/log/mod.ts";
import { servicePools } from "./databases.ts";
import { every } from "./every.ts";

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

/** Rows with a tenant_id that the wipe keeps (see above). */
const KEPT = [
  "platform.tenants",
  "platform.sessions",
  "platform.closed_refusals",
];

/** One advisory lock: one wipe at a time across processes. */
const LOCK_KEY = 7_316_024_002;

/**
 * How long the fence waits at most: past the relay's lease (30 s) and any
 * transaction of the program. A wipe that waited longer fails, and tries
 * again at the next run; its sandboxes stay closed meanwhile.
 */
const FENCE_MS = 120_000;

/** What the transport needs to hear of a wipe (lib/workers Messaging). */
export interface WipedTransport {
  forget(sandboxIds: readonly string[]): Promise<void>;
}

export interface WipeOptions {
  /** The moment taken as now (for tests); the database's now() otherwise. */
  at?: Date;
  /** Told to drop what it holds of the wiped sandboxes. */
  transport?: WipedTransport;
  /** How long the fence waits at most (default two minutes). */
  fenceMs?: number;
}

export interface WipeResult {
  cutoff: Date;
  ran: boolean;
  sandboxes: number;
  rowsDeleted: number;
}

/**
 * Runs the wipe for the boundary at or before now (the database's), unless
 * it finished already and no sandbox is left wiping, or another process is
 * running it.
 */
export async function wipeDue(
  sql: Sql,
  log: Logger,
  options: WipeOptions = {},
): Promise<WipeResult> {
  const [{ cutoff, due }] = await sql<{ cutoff: Date; due: boolean }[]>`
    select c.cutoff,
           not exists (select from platform.wipes w
                        where w.cutoff = c.cutoff and w.finished_at is not null)
           or exists (select from platform.tenants
                       where wiping_at is not null and wiped_at is null) as due
      from (select platform.wipe_cutoff(
                     coalesce(${options.at ?? null}::timestamptz, now()))
                   as cutoff) c`;
  const idle = { cutoff, ran: false, sandboxes: 0, rowsDeleted: 0 };
  if (!due) return idle;
  // A session lock, held across the steps on a connection of its own, and
  // let go by the server should that connection die.
  const lock = await sql.reserve();
  try {
    const [{ locked }] = await lock<{ locked: boolean }[]>`
      select pg_try_advisory_lock(${LOCK_KEY}) as locked`;
    if (!locked) return idle;
    try {
      return await wipe(sql, log, cutoff, options);
    } catch (error) {
      // Keep the failure visible; the next run of the schedule tries again.
      await sql`
        insert into platform.wipes (cutoff, error)
        values (${cutoff}, ${(error as Error).message})
        on conflict (cutoff) do update set error = excluded.error`;
      log.error("sandbox_wipe_failed", { cutoff, error });
      throw error;
    } finally {
      await lock`select pg_advisory_unlock(${LOCK_KEY})`.catch(() => {});
    }
  } finally {
    lock.release();
  }
}

async function wipe(
  sql: Sql,
  log: Logger,
  cutoff: Date,
  options: WipeOptions,
): Promise<WipeResult> {
  await sql`insert into platform.wipes (cutoff) values (${cutoff})
            on conflict (cutoff) do nothing`;
  const ids = await close(sql, cutoff);
  // Split mode: each service's database closes them too, and is fenced and
  // emptied on its own (the console's own database last, below).
  const others = servicePools(sql).filter((pool) => pool !== sql);
  if (ids.length > 0) {
    for (const pool of others) await closeCopies(sql, pool, ids);
    for (const pool of [sql, ...others]) {
      await fence(pool, ids, options.fenceMs ?? FENCE_MS);
    }
    await options.transport?.forget(ids);
  }
  let rowsDeleted = 0;
  for (const pool of others) {
    rowsDeleted += await asOwner(pool, (tx) => empty(tx, ids, log));
  }
  // The console's database last: its row of the wipe counts them all.
  rowsDeleted += await asOwner(sql, async (tx) => {
    const deleted = await empty(tx, ids, log);
    await tx`
      insert into platform.wipes (cutoff, finished_at, sandboxes, rows_deleted)
      values (${cutoff}, now(), ${ids.length}, ${rowsDeleted + deleted})
      on conflict (cutoff) do update set finished_at = now(), error = null,
        sandboxes = excluded.sandboxes, rows_deleted = excluded.rows_deleted`;
    return deleted;
  });
  log.info("sandbox_wipe", { cutoff, sandboxes: ids.length, rowsDeleted });
  return { cutoff, ran: true, sandboxes: ids.length, rowsDeleted };
}

/**
 * Step 1: closes the sandboxes created before `cutoff` and ends their
 * sessions, committed at once. Returns those and the sandboxes a wipe
 * closed before and did not finish.
 */
async function close(sql: Sql, cutoff: Date): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    with closed as (
      update platform.tenants set wiping_at = now()
       where created_at < ${cutoff} and wiping_at is null
      returning id
    ), ids as (
      -- The statement's snapshot is from before its update: the sandboxes
      -- closed earlier and left wiping.
      select id from closed
      union all
      select id from platform.tenants
       where wiping_at is not null and wiped_at is null
    ), ended as (
      update platform.sessions set ended_at = now()
       where tenant_id in (select id from ids) and ended_at is null
    )
    select id from ids`;
  return rows.map((r) => r.id);
}

/**
 * Step 1 in another service's database (split mode): the sandboxes live in
 * the console's database alone, so each other database gets a closed copy
 * of their rows, which its gate and its workers' claims read. A run that
 * takes up an unfinished wipe closes them again, changing nothing.
 */
async function closeCopies(main: Sql, pool: Sql, ids: readonly string[]) {
  const tenants = await main<
    { id: string; name: string; created_at: Date; wiping_at: Date }[]
  >`
    select id, name, created_at, wiping_at from platform.tenants
     where id = any(${ids as string[]}::uuid[])`;
  await pool`
    insert into platform.tenants ${pool(tenants)}
    on conflict (id) do update set wiping_at = excluded.wiping_at
     where platform.tenants.wiping_at is null`;
}

/**
 * Step 2: waits until no transaction that was running when the sandboxes
 * were closed is left (as CREATE INDEX CONCURRENTLY waits for older
 * snapshots: by their virtual transaction ids, which every transaction has
 * from its first statement), then until the relay holds no lease on their
 * outbox rows. Client backends of this database only: autovacuum writes
 * nothing of a sandbox.
 */
async function fence(sql: Sql, ids: readonly string[], fenceMs: number) {
  const deadline = Date.now() + fenceMs;
  const running = (await sql<{ v: string }[]>`
    select l.virtualxid as v from pg_locks l
      join pg_stat_activity a on a.pid = l.pid
     where l.locktype = 'virtualxid' and l.granted
       and a.datname = current_database()
       and a.backend_type = 'client backend'
       and l.pid <> pg_backend_pid()`).map((r) => r.v);
  await until(
    deadline,
    "transactions that began before the close",
    async () =>
      running.length === 0 || (await sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks
       where locktype = 'virtualxid' and granted
         and virtualxid = any(${running}::text[])`)[0].n === 0,
  );
  const outboxes = (await sql<{ t: string }[]>`
    select format('%I.%I', table_schema, table_name) as t
      from information_schema.columns
     where table_name = 'outbox' and column_name = 'lease_expires_at'`)
    .map((r) => r.t);
  for (const outbox of outboxes) {
    await until(
      deadline,
      `the relay's leases on ${outbox}`,
      async () =>
        (await sql<{ leased: boolean }[]>`
        select exists (
          select from ${sql(outbox)}
           where tenant_id = any(${ids as string[]}::uuid[])
             and state = 'claimed' and lease_expires_at > now()) as leased`)[0]
          .leased === false,
    );
  }
}

/** Polls `done` (10 ms, doubling to 200 ms) until it is true or time is up. */
async function until(
  deadline: number,
  what: string,
  done: () => Promise<boolean>,
) {
  for (let pause = 10;; pause = Math.min(pause * 2, 200)) {
    if (await done()) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `the wipe gave up waiting for ${what}; its sandboxes stay closed, and the next run tries again`,
      );
    }
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * Step 4 in one database: deletes the sandboxes' rows and marks them wiped
 * there. Returns how many rows went.
 */
async function empty(
  tx: TxSql,
  ids: readonly string[],
  log: Logger,
): Promise<number> {
  const deleted = ids.length > 0 ? await deleteRows(tx, ids, log) : 0;
  await tx`update platform.tenants set wiped_at = now()
            where id = any(${ids as string[]}::uuid[])`;
  return deleted;
}

/**
 * Step 4: deletes every row of the sandboxes, in every table that has a
 * tenant_id but the kept ones. A second pass finds nothing unless
 * something wrote past the gate; it deletes that too, and says so (a bug to
 * fix). Three passes that each found rows fail the wipe, which leaves the
 * sandboxes wiping for the next run.
 */
async function deleteRows(
  tx: TxSql,
  ids: readonly string[],
  log: Logger,
): Promise<number> {
  const tables = (await tx<{ t: string }[]>`
    select format('%I.%I', c.table_schema, c.table_name) as t
      from information_schema.columns c
      join information_schema.tables t using (table_schema, table_name)
     where c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE'
       and c.table_schema not in ('pg_catalog', 'information_schema')`)
    .map((r) => r.t).filter((t) => !KEPT.includes(t));
  // In split mode a database holds some of FIRST's tables, not all.
  const ordered = [
    ...FIRST.filter((t) => tables.includes(t)),
    ...tables.filter((t) => !FIRST.includes(t)),
  ];
  let total = 0;
  for (let pass = 1;; pass++) {
    const found: Record<string, number> = {};
    for (const table of ordered) {
      const deleted = await tx`
        delete from ${tx(table)}
         where tenant_id = any(${ids as string[]}::uuid[])`;
      if (deleted.count > 0) found[table] = deleted.count;
    }
    const n = Object.values(found).reduce((a, b) => a + b, 0);
    if (n === 0) return total;
    total += n;
    if (pass === 1) continue;
    log.error("sandbox_wipe_stragglers", {
      pass,
      found,
      message: "rows of closed sandboxes were written past the gate",
    });
    if (pass === 3) {
      throw new Error(
        "rows of the closed sandboxes kept coming while the wipe deleted them",
      );
    }
  }
}

/**
 * Every 15 minutes: run the wipe that is due. Returns the stop function,
 * which waits for a wipe in progress.
 */
export function scheduleWipes(
  sql: Sql,
  log: Logger,
  options: { everyMs?: number; transport?: WipedTransport } = {},
): () => Promise<void> {
  return every(
    () => wipeDue(sql, log, { transport: options.transport }),
    { everyMs: options.everyMs ?? 15 * 60_000, firstMs: 1000 },
  );
}
