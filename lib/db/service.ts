/**
 * The one way to work as a service: a transaction that begins with
 * `SET LOCAL ROLE <service>` and names the sandbox it works in. PostgreSQL
 * enforces the rest: the role reaches its own schema only, and row-level
 * security shows it only the rows of that sandbox.
 */
import type { Sql, TxSql } from "./connect.ts";

/** Whose rows a transaction may see: one sandbox, or all (relays, consumers). */
export type Scope = { sandboxId: string } | "workers";

/** A service transaction: the handle, and who it works as. */
export interface ServiceTx {
  sql: TxSql;
  service: string;
  scope: Scope;
  /** The pool the transaction came from. */
  pool: Sql;
  /**
   * Runs `fn` once the transaction has committed (never after a rollback).
   * For hints to other parts of the process, such as waking the relay.
   */
  afterCommit(fn: () => void): void;
}

const SERVICE_NAME = /^[a-z][a-z_]{1,30}$/;

/**
 * Runs `fn` in one transaction as `service`, inside `scope`. The transaction
 * commits when `fn` resolves and rolls back when it throws.
 *
 * @example
 * ```ts
 * await asService(sql, "orders", { sandboxId }, async ({ sql }) => {
 *   await sql`insert into orders.orders ${sql(row)}`;
 * });
 * ```
 */
export async function asService<T>(
  sql: Sql,
  service: string,
  scope: Scope,
  fn: (tx: ServiceTx) => Promise<T>,
  options: {
    /**
     * One snapshot for every statement (REPEATABLE READ, READ ONLY): for
     * reports that add up several queries and must not see a commit land
     * between two of them.
     */
    snapshot?: boolean;
    /**
     * Commit without waiting for the WAL flush (synchronous_commit off), for
     * the relay's and consumers' bookkeeping only, never for a sender's
     * command or a receiver's effect. Safe there because WAL is flushed in
     * order: if a bookkeeping commit is lost in a crash, so is everything
     * that committed after it, and the worst outcome is a repeat publish or
     * delivery, which the queue and the inboxes ignore.
     */
    bookkeeping?: boolean;
  } = {},
): Promise<T> {
  if (!SERVICE_NAME.test(service)) {
    throw new TypeError(`not a service name: ${JSON.stringify(service)}`);
  }
  const committed: (() => void)[] = [];
  const mode = options.snapshot
    ? "isolation level repeatable read read only"
    : "";
  // Bookkeeping reads only through partial indexes of pending rows. The
  // planner cannot know that the sandbox policy lets a worker see every row
  // (it guesses 0.5 %), so it would seq-scan and sort the whole backlog to
  // claim 100 rows (10 ms at 20,000 pending, measured; 0.1 ms by the index).
  // Those switches price a plan that must sort at 10^10, which would make
  // PostgreSQL JIT-compile every statement that sorts a few rows (800 ms for
  // a relay batch, measured): bookkeeping runs with jit off.
  const bk = options.bookkeeping ?? false;
  const result = await sql.begin(mode, async (tx) => {
    // set_config(..., true) is SET LOCAL with a bound value: the role, the
    // sandbox and the scope end with the transaction. It is sent at once and
    // not waited for: the connection runs statements in order, so `fn`'s
    // first statement goes out in the same round trip and still runs as the
    // service. Should it fail, the transaction is aborted, every later
    // statement fails, and postgres.js rethrows the first error.
    const setup = tx`select set_config('role', ${service}, true),
      set_config('app.sandbox_id', ${
      scope === "workers" ? "" : scope.sandboxId
    }, true),
      set_config('app.scope', ${scope === "workers" ? "workers" : ""}, true),
      set_config('synchronous_commit',
        coalesce(${
      bk ? "off" : null
    }, current_setting('synchronous_commit')), true),
      set_config('enable_seqscan',
        coalesce(${
      bk ? "off" : null
    }, current_setting('enable_seqscan')), true),
      set_config('enable_sort',
        coalesce(${bk ? "off" : null}, current_setting('enable_sort')), true),
      set_config('jit', coalesce(${bk ? "off" : null}, current_setting('jit')),
        true)`
      .execute();
    const out = await fn({
      sql: tx,
      service,
      scope,
      pool: sql,
      afterCommit: (f) => committed.push(f),
    });
    await setup;
    return out;
  }) as T;
  for (const f of committed) f();
  return result;
}

/**
 * A transaction of the relay's or consumers' bookkeeping: as `service`, for
 * every sandbox, committed without waiting for the WAL flush (see the
 * `bookkeeping` option of {@link asService} for why that loses nothing).
 */
export function asBookkeeper<T>(
  sql: Sql,
  service: string,
  fn: (tx: ServiceTx) => Promise<T>,
): Promise<T> {
  return asService(sql, service, "workers", fn, { bookkeeping: true });
}
