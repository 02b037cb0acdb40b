/**
 * A reserved connection that outlives the loss of its server process.
 *
 * postgres.js 3.4.9 does not, on its own: once the socket of a reserved
 * connection has closed (the backend was terminated, the server restarted,
 * the network dropped), the next statement sent on it throws a TypeError
 * from a timer, outside any promise. That is an uncaught exception, which
 * ends a Deno process, and the statement's promise never settles. And
 * `release()` puts the dead connection back among the pool's open ones,
 * where the pool's next query meets the same end (both seen here; the
 * library's tracker has the first as an open issue).
 *
 * So the first statement goes with the query option that postgres.js's own
 * `begin()` uses to learn its connection (`onexecute`), and the connection's
 * `onclose` hook, which the pool calls when the socket has closed, marks it
 * lost. From then on every statement goes to a pool that has ended, which
 * fails it at once (CONNECTION_ENDED), and `release()` does nothing: the pool
 * has already counted the connection as closed and opens a new one when it
 * needs one. Both are internals of the pinned version; the tests in
 * tests/core/service_connection_test.ts fail the day they change.
 *
 * Nor does it settle a statement that waits in a reserved connection's own
 * queue (behind one that must be described first, say) when the socket
 * closes: `guard` races such a wait against the loss.
 *
 * A third defect: a `reserve()` that waits for a connection while that
 * connection closes and reconnects is dropped by the pool, and its promise
 * never settles (the library's tracker has it as an open issue). A server
 * restart does that to a loop that retries, and the loop then hangs for
 * good. So a reserve that has not been served within
 * {@link RESERVE_TIMEOUT_MS} fails as a lost connection would, and the
 * connection it may still get later is given back at once.
 */
import postgres from "postgres";
import type { Logger } from "../log/mod.ts";
import type { ReservedSql, Sql } from "./connect.ts";

/** What postgres.js's connection offers that is used here. */
interface PgConnection {
  onclose: ((error: Error) => void) | null;
}

export interface WatchedConnection {
  /** The reserved connection; after a loss, statements fail at once. */
  sql: ReservedSql;
  /** Sends `text` (BEGIN ...) as the first statement, and starts watching. */
  begin(text: string): Promise<unknown>;
  /** The error that closed the connection, once it has. */
  lost(): Error | undefined;
  /**
   * `promise`, or the error that closed the connection, whichever comes
   * first. A statement queued behind another on a reserved connection is
   * never settled when the socket closes (see the header): a transaction
   * waits through this instead.
   */
  guard<T>(promise: PromiseLike<T>): Promise<T>;
  /**
   * Marks the connection as going away: an error said so before its socket
   * closed. It is not given back now. Should the socket still be open after
   * ABANDON_GRACE_MS, the error was not this connection's (a statement of
   * another pool failed inside the transaction): the transaction is rolled
   * back and the connection given back, so that the pool does not lose it.
   */
  abandon(): void;
  /**
   * Back to the pool, unless it was lost or abandoned: the pool moves it to
   * its closed ones when the socket closes, and opens a new one in its place.
   */
  release(): void;
}

/** How long an abandoned connection is given to close (see `abandon`). */
export const ABANDON_GRACE_MS = 1000;

/**
 * How long a reserve may wait for a connection. Well above what a busy pool
 * makes anyone wait (a statement of the relay or the consumers takes
 * milliseconds). A reserve stranded by a restart costs its loop this long
 * and then a retry, which may strand once more: at 15 s, two in a row kept
 * a message from being delivered for 30 s after the server came back. A
 * connect slower than this fails the reserve, and the loop tries again.
 */
export const RESERVE_TIMEOUT_MS = 5_000;

/** A reserve that was not served in time (see {@link RESERVE_TIMEOUT_MS}). */
export class ReserveTimeout extends Error {
  override name = "ReserveTimeout";
  /** A connection error's code, so that callers treat it as one. */
  readonly code = "CONNECTION_RESERVE_TIMEOUT";
  constructor(ms: number) {
    super(`no connection of the pool was free within ${ms} ms`);
  }
}

/** `pool.reserve()`, failed with {@link ReserveTimeout} after `ms`. */
export async function reserveWithin(
  pool: Sql,
  ms = RESERVE_TIMEOUT_MS,
): Promise<ReservedSql> {
  const reserving = pool.reserve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReserveTimeout(ms)), ms);
  });
  try {
    const reserved = await Promise.race([reserving, late]);
    renewals.get(pool)?.served();
    return reserved;
  } catch (error) {
    // Served after all, later: nobody is waiting for it any more.
    if (error instanceof ReserveTimeout) {
      reserving.then((reserved) => reserved.release(), () => {});
      renewals.get(pool)?.timedOut();
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reserves in a row that may time out before a {@link renewablePool} is
 * replaced. One may be a busy pool; two in a row, at 5 s each, are not.
 */
export const RENEW_AFTER_TIMEOUTS = 2;

const renewals = new WeakMap<
  Sql,
  { served(): void; timedOut(): void }
>();

/**
 * A pool that replaces itself when its reserves keep timing out. A server
 * restart can leave every connection of a small pool held by reserves that
 * postgres.js dropped (the third defect above): the pool then never serves
 * again, and a loop that retries on it waits for ever. After
 * {@link RENEW_AFTER_TIMEOUTS} timeouts in a row, `make` opens a new pool,
 * which takes every statement and reserve from then on; the old one is
 * ended without waiting for it. `end()` ends the pool in use.
 */
export function renewablePool(make: () => Sql, log?: Logger): Sql {
  let current = make();
  let timeouts = 0;
  const pool = new Proxy(current, {
    apply: (_target, self, args) => Reflect.apply(current, self, args),
    get: (_target, key) => Reflect.get(current, key),
  });
  renewals.set(pool, {
    served: () => timeouts = 0,
    timedOut: () => {
      if (++timeouts < RENEW_AFTER_TIMEOUTS) return;
      timeouts = 0;
      const old = current;
      current = make();
      log?.warn("pool_renewed", { after: RENEW_AFTER_TIMEOUTS });
      old.end({ timeout: 1 }).catch(() => {});
    },
  });
  return pool;
}

let ended: Sql | undefined;

/** A pool that has ended: every statement sent to it fails at once. */
function endedPool(): Sql {
  if (!ended) {
    ended = postgres({ max: 1, onnotice: () => {} });
    ended.end().catch(() => {});
  }
  return ended;
}

/** Reserves a connection of `pool` and watches it for loss. */
export async function reserveWatched(
  pool: Sql,
  reserveMs = RESERVE_TIMEOUT_MS,
): Promise<WatchedConnection> {
  const reserved = await reserveWithin(pool, reserveMs);
  let connection: PgConnection | undefined;
  let lostWith: Error | undefined;
  let rejectLost: (error: Error) => void = () => {};
  const whenLost = new Promise<never>((_, reject) => rejectLost = reject);
  whenLost.catch(() => {});
  let abandoned = false;
  let grace: ReturnType<typeof setTimeout> | undefined;
  const sql = new Proxy(reserved, {
    apply(target, self, args) {
      return Reflect.apply(lostWith ? endedPool() : target, self, args);
    },
    get(target, key) {
      if (lostWith && (key === "unsafe" || key === "file")) {
        return Reflect.get(endedPool(), key);
      }
      return Reflect.get(target, key);
    },
  }) as ReservedSql;
  const onexecute = (c: PgConnection) => {
    connection = c;
    c.onclose = (error) => {
      lostWith = error;
      rejectLost(error);
      clearTimeout(grace);
    };
    // The answer postgres.js's begin() gives: the connection may take the
    // next statement now.
    return true;
  };
  return {
    sql,
    begin: (text) =>
      reserved.unsafe(text, [], { onexecute } as postgres.UnsafeQueryOptions)
        .execute(),
    lost: () => lostWith,
    guard: (promise) => Promise.race([promise, whenLost]),
    abandon: () => {
      if (lostWith || abandoned) return;
      abandoned = true;
      grace = setTimeout(() => {
        if (lostWith) return;
        reserved`rollback`.catch(() => {}).finally(() => {
          if (lostWith) return;
          if (connection) connection.onclose = null;
          reserved.release();
        });
      }, ABANDON_GRACE_MS);
      // Never what keeps a process from ending.
      Deno.unrefTimer(grace);
    },
    release: () => {
      if (lostWith || abandoned) return;
      if (connection) connection.onclose = null;
      reserved.release();
    },
  };
}

/**
 * True for an error of the connection rather than of a statement: the
 * socket closed or failed, the pool has ended, or the server said it is
 * ending the session (severity FATAL, as for a terminated process, or
 * PANIC). After one, nothing more should be sent on that connection; the
 * server rolls back what it had open.
 */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof postgres.PostgresError) {
    return error.severity === "FATAL" || error.severity === "PANIC";
  }
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" &&
    (code.startsWith("CONNECTION_") || code === "CONNECT_TIMEOUT" ||
      /^E(CONNRESET|CONNREFUSED|CONNABORTED|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH)$/
        .test(code));
}
