/**
 * The one way to work as a service: a transaction that begins with
 * `SET LOCAL ROLE <service>` and names the tenant it works in. PostgreSQL
 * enforces the rest: the role reaches its own schema only, and row-level
 * security shows it only the rows of that tenant.
 */
import { inSpan, tracing } from "../trace/mod.ts";
import type postgres from "postgres";
import type { ReservedSql, Sql, TxSql } from "./connect.ts";
import {
  isTenantClosedError,
  TENANT_CLOSED_CODE,
  TenantClosed,
} from "./closed.ts";
import { isConnectionError, reserveWatched } from "./reserved.ts";
import { inPlatform } from "./names.ts";

/** Whose rows a transaction may see: one tenant, or all (relays, consumers). */
export type Scope = { tenantId: string } | "workers";

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

/** Where a service's transactions go: its own database's pool, or none. */
export type ServiceRoute = (service: string) => Sql | undefined;

const routes = new WeakMap<Sql, ServiceRoute>();

/**
 * Sends each service transaction begun on `sql` to the pool `route` names
 * for that service: the database of its own, when services are split
 * across databases. A service that `route` names no pool for works on
 * `sql`. Since {@link asService} is the one way to work as a service, the
 * callers do not change when a service moves to a database of its own.
 */
export function routeServices(sql: Sql, route: ServiceRoute) {
  routes.set(sql, route);
}

/** True when `sql` sends services to databases of their own. */
export function isRouted(sql: Sql): boolean {
  return routes.has(sql);
}

/** The pool that `service`'s transactions begun on `sql` use. */
export function poolOf(sql: Sql, service: string): Sql {
  return routes.get(sql)?.(service) ?? sql;
}

/**
 * Runs `fn` in one transaction as `service`, inside `scope`. The transaction
 * commits when `fn` resolves and rolls back when it throws. A transaction
 * in a tenant whose wipe has begun is refused as it begins, with
 * {@link TenantClosed} (lib/db/closed.ts).
 *
 * @example
 * ```ts
 * await asService(sql, "orders", { tenantId }, async ({ sql }) => {
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
    /**
     * Bookkeeping whose commit must reach the disk before the caller tells
     * anyone outside PostgreSQL (the JetStream consumer acknowledges the
     * broker after its finish): synchronous_commit stays on. The other
     * bookkeeping switches still apply.
     */
    durableCommit?: boolean;
    /**
     * Plan each statement once per connection instead of at every run
     * (plan_cache_mode force_generic_plan), for statements whose plan does
     * not depend on their parameters. PostgreSQL plans a statement anew for
     * its first five runs and keeps doing so when the plan without
     * parameters looks dearer, which it does for anything with `LIMIT $n`
     * (guessed at a tenth of the table) or `unnest($n)` (ten rows, where a
     * known array gives its length): a consumer's claim, and a receiver's
     * set of a few messages, spent longer planning than running
     * (bench/HISTORY.md).
     */
    genericPlans?: boolean;
    /**
     * `fn` returns one statement, not yet sent; COMMIT goes right behind it
     * (see {@link bookkeepingStatement} and {@link serviceStatement}).
     */
    commitWithStatement?: boolean;
    /** In its span already (see below). */
    traced?: boolean;
  } = {},
): Promise<T> {
  if (!SERVICE_NAME.test(service)) {
    throw new TypeError(`not a service name: ${JSON.stringify(service)}`);
  }
  sql = poolOf(sql, service);
  // Bookkeeping reads only through partial indexes of pending rows. The
  // planner cannot know that the tenant policy lets a worker see every row
  // (it guesses 0.5 %), so it would seq-scan and sort the whole backlog to
  // claim 100 rows, a hundred times slower than by the index. Those
  // switches price a plan that must sort at 10^10, which would make
  // PostgreSQL JIT-compile every statement that sorts a few rows, for far
  // longer than the statement runs: bookkeeping runs with jit off. (The
  // figures: bench/HISTORY.md, "Figures that were in the code's comments".)
  const bk = options.bookkeeping ?? false;
  // A span for a service's own transaction in a tenant (a command, a
  // receiver's apply); the workers' would only bury those under their own.
  if (tracing && !bk && !options.traced && scope !== "workers") {
    return await inSpan(`transaction ${service}`, {
      attributes: {
        "db.system": "postgresql",
        "outbox.service": service,
        "outbox.tenant": scope.tenantId,
      },
    }, () => asService(sql, service, scope, fn, { ...options, traced: true }));
  }
  return await transaction(
    sql,
    options.snapshot
      ? "begin isolation level repeatable read read only"
      : "begin",
    (tx) => {
      // set_config(..., true) is SET LOCAL with a bound value: the role, the
      // tenant and the scope end with the transaction. Bookkeeping also
      // sets its four switches; other transactions leave them alone.
      // A tenant's transaction passes its gate here, in the same round
      // trip: one look at the tenant's row, refused once its wipe has
      // begun. The wipe waits for every transaction that began before it
      // closed the tenant (the application's wipe), so none that passed the
      // gate writes after the wipe has deleted. Workers' transactions
      // span tenants: their claims leave the closed ones instead.
      // The look is inline, not platform.enter_tenant (the same rule):
      // a security definer function with its own search_path took about
      // 20 us a call, the inline look about 2. Its privileges are the
      // program's own user's, checked as the statement starts, before it
      // sets the role.
      const gate = scope === "workers" ? tx`` : tx`
        (select ${tx(inPlatform("refuse"))}(${TENANT_CLOSED_CODE},
                  'tenant ' || s.id || ' is closed: it is being wiped or was wiped')
           from ${tx(inPlatform("tenants"))} s
          where s.id = ${scope.tenantId}::uuid and s.wiping_at is not null),`;
      const generic = options.genericPlans
        ? tx`, set_config('plan_cache_mode', 'force_generic_plan', true)`
        : tx``;
      const asynchronous = options.durableCommit
        ? tx``
        : tx`, set_config('synchronous_commit', 'off', true)`;
      const switches = bk
        ? tx`${asynchronous},
            set_config('enable_seqscan', 'off', true),
            set_config('enable_sort', 'off', true),
            set_config('jit', 'off', true)${generic}`
        : generic;
      return tx`select ${gate} set_config('role', ${service}, true),
        set_config('app.tenant_id', ${
        scope === "workers" ? "" : scope.tenantId
      }, true),
        set_config('app.scope', ${
        scope === "workers" ? "workers" : ""
      }, true)${switches}`.execute();
    },
    (tx, afterCommit) =>
      fn({ sql: tx, service, scope, pool: sql, afterCommit }),
    options.commitWithStatement ?? false,
  ).catch((error) => {
    // The gate refused the transaction; the statements behind it failed
    // only because it had.
    if (scope !== "workers" && isTenantClosedError(error)) {
      throw new TenantClosed(scope.tenantId, service, { cause: error });
    }
    throw error;
  });
}

/**
 * Runs `fn` in one transaction as the pool's own user, with no role or
 * tenant set: for the platform's own jobs that reach every schema (the
 * daily wipe). Commits when `fn` resolves, rolls back when it throws, and
 * fails with {@link ConnectionLost} as a service transaction does.
 */
export async function asOwner<T>(
  sql: Sql,
  fn: (tx: TxSql) => Promise<T>,
): Promise<T> {
  return await transaction(sql, "begin", null, (tx) => fn(tx));
}

/**
 * The transaction itself. BEGIN, the setup and `fn`'s first statement leave
 * in one round trip: a reserved connection runs what it is sent in order,
 * and nothing waits for BEGIN's answer (postgres.js's own begin() would).
 * Should any of them fail, the transaction is aborted, every later statement
 * fails with it, and COMMIT answers ROLLBACK, which is an error here. The
 * connection is watched: should its server process go away, what is left of
 * the transaction fails instead of ending the process (lib/db/reserved.ts).
 */
async function transaction<T>(
  sql: Sql,
  beginText: string,
  setup: ((tx: TxSql) => Promise<unknown>) | null,
  fn: (tx: TxSql, afterCommit: (f: () => void) => void) => Promise<T>,
  commitWithStatement = false,
): Promise<T> {
  const committed: (() => void)[] = [];
  const conn = await reserveWatched(sql);
  const tx = withSavepoints(conn.sql);
  let result: T;
  let commitSent = false;
  let set: Promise<unknown> = Promise.resolve();
  try {
    const begin = conn.begin(beginText);
    set = setup?.(tx) ?? Promise.resolve();
    // Read after `fn`, so that their failure is not unhandled meanwhile.
    begin.catch(() => {});
    set.catch(() => {});
    let done: postgres.RowList<postgres.Row[]>;
    if (commitWithStatement) {
      // `fn` gave its statement without sending it: send it, then COMMIT,
      // and wait for both answers at once. Should the statement fail, the
      // COMMIT answers ROLLBACK, and the statement's error is thrown.
      const statement = (fn(tx, (f) => committed.push(f)) as unknown as {
        execute(): Promise<T>;
      }).execute();
      commitSent = true;
      const commit = tx`commit`.execute();
      commit.catch(() => {});
      result = await conn.guard(statement);
      await conn.guard(begin);
      await conn.guard(set);
      done = await conn.guard(commit);
    } else {
      result = await conn.guard(fn(tx, (f) => committed.push(f)));
      // COMMIT goes out at once, without waiting for BEGIN and the setup to
      // answer: a `fn` that sent its statements without waiting for them
      // (lib/inbox/receive.ts) costs one round trip in all. Should BEGIN or
      // the setup have failed, COMMIT answers ROLLBACK and their error is
      // thrown.
      commitSent = true;
      const commit = tx`commit`.execute();
      commit.catch(() => {});
      await conn.guard(begin);
      await conn.guard(set);
      done = await conn.guard(commit);
    }
    if (done.command !== "COMMIT") {
      throw new RolledBack(
        "the transaction was rolled back: one of its statements failed",
      );
    }
  } catch (error) {
    const lost = conn.lost();
    if (lost || isConnectionError(error)) {
      // Nothing more goes to that connection, and it is not given back; the
      // server rolls back a transaction whose connection has gone.
      conn.abandon();
      throw new ConnectionLost(commitSent, lost ?? error);
    }
    // After a failed COMMIT there is nothing left to roll back; the first
    // error is the one that tells: the setup's, when it failed (what came
    // behind it failed because it had).
    await tx`rollback`.catch(() => {});
    throw await set.then(() => error, (setupError) => setupError);
  } finally {
    conn.release();
  }
  for (const f of committed) f();
  return result;
}

/**
 * A bookkeeping transaction (see {@link asBookkeeper}) of one statement,
 * whose COMMIT is sent right behind it instead of after its answer: BEGIN,
 * the setup and the statement leave in one round trip, COMMIT in the same
 * breath, and the answers come back together. The relay's move and the
 * consumers' claim and finish are one statement each. A round trip costs
 * about as much as a one-row move takes to run (bench/HISTORY.md, "Figures
 * that were in the code's comments").
 *
 * `statement` must return the query as postgres.js builds it, unsent (not
 * awaited, not from an async function).
 */
export function bookkeepingStatement<R extends readonly postgres.MaybeRow[]>(
  sql: Sql,
  service: string,
  statement: (tx: ServiceTx) => postgres.PendingQuery<R>,
  options: { genericPlans?: boolean; durableCommit?: boolean } = {},
): Promise<postgres.RowList<R>> {
  return serviceStatement(sql, service, "workers", statement, {
    bookkeeping: true,
    ...options,
  });
}

/**
 * A service transaction (see {@link asService}) of one statement, whose
 * COMMIT is sent right behind it, as {@link bookkeepingStatement} does for
 * the workers: one round trip for the whole transaction. Only for a
 * statement that decides all or nothing by itself: when it must not
 * commit, it fails (so the COMMIT answers ROLLBACK, and the statement's
 * error is thrown).
 *
 * `statement` must return the query as postgres.js builds it, unsent (not
 * awaited, not from an async function).
 */
export function serviceStatement<R extends readonly postgres.MaybeRow[]>(
  sql: Sql,
  service: string,
  scope: Scope,
  statement: (tx: ServiceTx) => postgres.PendingQuery<R>,
  options: {
    bookkeeping?: boolean;
    genericPlans?: boolean;
    durableCommit?: boolean;
  } = {},
): Promise<postgres.RowList<R>> {
  return asService(
    sql,
    service,
    scope,
    statement as unknown as (tx: ServiceTx) => Promise<postgres.RowList<R>>,
    { ...options, commitWithStatement: true },
  );
}

/**
 * A transaction of the relay's or consumers' bookkeeping: as `service`, for
 * every tenant, committed without waiting for the WAL flush (see the
 * `bookkeeping` option of {@link asService} for why that loses nothing).
 */
export function asBookkeeper<T>(
  sql: Sql,
  service: string,
  fn: (tx: ServiceTx) => Promise<T>,
  options: { genericPlans?: boolean } = {},
): Promise<T> {
  return asService(sql, service, "workers", fn, {
    bookkeeping: true,
    genericPlans: options.genericPlans,
  });
}

/**
 * The connection of a service transaction went away before its COMMIT was
 * answered (the server process was terminated, the server restarted, the
 * network failed). Before COMMIT was sent, the transaction did not commit;
 * with COMMIT on its way, nobody can tell, so a caller that must know looks
 * at the rows (commands are idempotent for that reason).
 */
export class ConnectionLost extends Error {
  override name = "ConnectionLost";
  constructor(readonly commitSent: boolean, cause: unknown) {
    super(
      commitSent
        ? "the connection to PostgreSQL was lost while COMMIT was on its way: the transaction may or may not have committed"
        : "the connection to PostgreSQL was lost during the transaction: nothing of it was committed",
      { cause },
    );
  }
}

/** COMMIT found the transaction aborted by a statement nobody waited for. */
export class RolledBack extends Error {
  override name = "RolledBack";
}

/**
 * The error a transaction that threw `error` should report: when its
 * COMMIT rolled it back ({@link RolledBack}) and `sent`, a statement sent
 * without waiting, failed, that statement's own error tells why; else
 * `error` itself.
 */
export async function rolledBackBy(
  error: unknown,
  sent: Promise<unknown> | undefined,
): Promise<unknown> {
  if (!(error instanceof RolledBack) || !sent) return error;
  return await sent.then(() => error, (failure) => failure);
}

/**
 * A reserved connection that also offers `savepoint(fn)` as a transaction
 * handle of postgres.js does: `fn` runs after SAVEPOINT, is released when it
 * resolves and rolled back to when it throws.
 */
function withSavepoints(reserved: ReservedSql): TxSql {
  let n = 0;
  const savepoint = async <U>(fn: (sp: TxSql) => U | Promise<U>) => {
    const name = reserved(`s${n++}`);
    await reserved`savepoint ${name}`;
    try {
      const out = await fn(tx);
      await reserved`release savepoint ${name}`;
      return out;
    } catch (error) {
      await reserved`rollback to savepoint ${name}`;
      throw error;
    }
  };
  const tx = Object.assign(reserved, { savepoint }) as unknown as TxSql;
  return tx;
}
