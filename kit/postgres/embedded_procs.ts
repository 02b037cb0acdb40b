/**
 * The processes of a cluster, found through /proc: every PostgreSQL process,
 * the postmaster and each of its children, works in the cluster directory
 * (its cwd), whatever its title says. A zombie (exited, not yet reaped) has
 * no cwd and runs nothing; it counts as gone.
 */
import type { Logger } from "../../lib/log/mod.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True for a process that runs (a zombie does not). */
function running(pid: number): boolean {
  if (Deno.build.os !== "linux") return signalable(pid);
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The state follows the command name, which ends with the last ")".
    return !"ZX".includes(stat.slice(stat.lastIndexOf(")") + 2)[0]);
  } catch {
    return false;
  }
}

/** True while any process, a zombie included, has this pid. */
function exists(pid: number): boolean {
  if (Deno.build.os !== "linux") return signalable(pid);
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

function signalable(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/** Running processes whose working directory is `clusterDir` (a real path). */
export async function clusterProcesses(clusterDir: string): Promise<number[]> {
  const found: number[] = [];
  let entries: AsyncIterable<Deno.DirEntry>;
  try {
    entries = Deno.readDir("/proc");
  } catch {
    return found;
  }
  try {
    for await (const entry of entries) {
      if (!/^\d+$/.test(entry.name)) continue;
      const cwd = await Deno.readLink(`/proc/${entry.name}/cwd`).catch(() =>
        ""
      );
      const pid = Number(entry.name);
      if (cwd === clusterDir && running(pid)) found.push(pid);
    }
  } catch {
    // No /proc on this system: only the lock file tells.
  }
  return found;
}

/** The postmaster's pid from the cluster's lock file, if there is one. */
async function lockFilePid(
  clusterDir: string,
): Promise<number | undefined> {
  const text = await Deno.readTextFile(`${clusterDir}/postmaster.pid`).catch(
    () => "",
  );
  const pid = Number(text.split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function signal(pids: number[], sig: Deno.Signal) {
  for (const pid of pids) {
    try {
      Deno.kill(pid, sig);
    } catch {
      // Already gone.
    }
  }
}

/** How long an earlier run's processes get to go before the start gives up. */
export const SETTLE_MS = 30_000;

/**
 * Makes the cluster ready for a new postmaster, for a caller that holds the
 * data directory's lock (so no live owner of ours uses it):
 * - a postmaster still running belongs to an owner that died without
 *   stopping it: it is asked for a fast shutdown;
 * - children left by a postmaster that died (SIGKILL, a power cut of the
 *   process group) are exiting on their own; they are asked to quit now;
 * - whatever still runs after 15 s (a postmaster) or 5 s (leftovers) is
 *   killed (WAL makes that safe: the next start recovers), and after
 *   SETTLE_MS the start fails;
 * - once nothing runs in the cluster, a lock file that still names a pid
 *   (a zombie not yet reaped, or a pid since reused) is stale, and
 *   PostgreSQL would refuse to start over it: it is removed.
 */
export async function settleCluster(
  clusterDir: string,
  log: Logger,
  abort?: AbortSignal,
): Promise<void> {
  const started = Date.now();
  let asked = false;
  let killed = false;
  let killAfterMs = 0;
  while (true) {
    abort?.throwIfAborted();
    const pids = await clusterProcesses(clusterDir);
    const postmaster = await lockFilePid(clusterDir);
    if (pids.length === 0) {
      if (postmaster !== undefined && exists(postmaster)) {
        log.warn("postgres_stale_lock_removed", { pid: postmaster });
        await Deno.remove(`${clusterDir}/postmaster.pid`).catch(() => {});
      }
      return;
    }
    const waited = Date.now() - started;
    if (!asked) {
      asked = true;
      if (postmaster !== undefined && pids.includes(postmaster)) {
        log.warn("postgres_orphan_stopped", { pid: postmaster });
        signal([postmaster], "SIGINT");
        // Its shutdown checkpoint may have much to write.
        killAfterMs = 15_000;
      } else {
        log.warn("postgres_leftovers_stopped", { pids });
        // SIGCONT too: a stopped process would not act on SIGQUIT.
        signal(pids, "SIGQUIT");
        signal(pids, "SIGCONT");
        killAfterMs = 5_000;
      }
    } else if (!killed && waited > killAfterMs) {
      killed = true;
      log.warn("postgres_leftovers_killed", { pids });
      signal(pids, "SIGKILL");
    } else if (waited > SETTLE_MS) {
      throw new Error(
        `an earlier PostgreSQL (pids ${
          pids.join(", ")
        }) still runs on ${clusterDir} and did not stop; stop it and start again`,
      );
    }
    await sleep(25);
  }
}

/**
 * Waits up to `ms` for every process of the cluster to be gone, then kills
 * what is left and waits for that (bounded too).
 */
export async function sweepCluster(clusterDir: string, ms: number) {
  const deadline = Date.now() + ms;
  let pids = await clusterProcesses(clusterDir);
  while (pids.length > 0 && Date.now() < deadline) {
    await sleep(25);
    pids = await clusterProcesses(clusterDir);
  }
  if (pids.length === 0) return;
  signal(pids, "SIGKILL");
  for (let i = 0; i < 40 && pids.length > 0; i++) {
    await sleep(25);
    pids = await clusterProcesses(clusterDir);
  }
}
