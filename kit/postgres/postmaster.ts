/**
 * One PostgreSQL server process (the postmaster) of an embedded cluster:
 * initdb, spawn, ready when its lock file says so (as pg_ctl decides), and a
 * stop that ends within a bound whatever state the server is in.
 */
import type { Logger } from "../../lib/log/mod.ts";
import type { Layout } from "./embedded_layout.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Postmasters of this process that have not exited. Should the process end
// without stopping one (Deno.exit before the shutdown reached it), the
// server is asked for a fast shutdown, which it completes on its own.
const live = new Set<Deno.ChildProcess>();
globalThis.addEventListener("unload", () => {
  for (const child of live) {
    try {
      child.kill("SIGINT");
    } catch {
      // Exited meanwhile.
    }
  }
});

/** Fast shutdown gets this long before an immediate one is asked for. */
export const FAST_STOP_MS = 2000;
/** An immediate shutdown gets this long before the postmaster is killed. */
export const QUIT_STOP_MS = 1000;

export interface Postmaster {
  pid: number;
  /** Settles once the process has exited and been reaped. */
  exited: Promise<Deno.CommandStatus>;
  /**
   * Fast shutdown (SIGINT); after FAST_STOP_MS immediate (SIGQUIT); after
   * QUIT_STOP_MS more, SIGKILL. Resolves when the postmaster has exited.
   */
  stop(): Promise<void>;
}

/** English messages whatever the machine's locale: logs and errors. */
const ENV = { LC_MESSAGES: "C" };

function runOptions(layout: Layout): Deno.CommandOptions {
  // Both binaries fail where they cannot read their working directory, and
  // ours may be out of the `postgres` user's reach: they start in "/" (the
  // paths they get are absolute; postgres then works in the cluster).
  return layout.runAs
    ? { uid: layout.runAs.uid, gid: layout.runAs.gid, env: ENV, cwd: "/" }
    : { env: ENV, cwd: "/" };
}

/** Creates the cluster with `password` for the superuser `postgres`. */
export async function initCluster(layout: Layout, password: string) {
  // initdb reads the password from a file that its user can read: beside
  // the cluster, 0600, gone when initdb is done.
  const file = `${layout.clusterDir.replace(/\/[^/]+$/, "")}/.initdb-password`;
  await Deno.writeTextFile(file, password + "\n", { mode: 0o600 });
  try {
    if (layout.runAs) {
      await Deno.chown(file, layout.runAs.uid, layout.runAs.gid);
    }
    const out = await new Deno.Command(layout.initdb, {
      ...runOptions(layout),
      args: [
        `--pgdata=${layout.clusterDir}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${file}`,
        "--encoding=UTF8",
        "--no-instructions",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const text = new TextDecoder().decode(out.stderr).trim();
      throw new Error(`initdb failed: ${text.split("\n").pop()}`);
    }
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

function described(status: Deno.CommandStatus): string {
  return status.signal ? `killed by ${status.signal}` : `code ${status.code}`;
}

/**
 * Spawns the postmaster on `port` and resolves once it accepts connections.
 * Fails (with PostgreSQL's own FATAL line when there is one) if it exits
 * first, is not ready within `readyMs`, or `abort` fires; it is then stopped.
 */
export async function spawnPostmaster(options: {
  layout: Layout;
  port: number;
  flags: string[];
  log: Logger;
  abort?: AbortSignal;
  readyMs?: number;
}): Promise<Postmaster> {
  const { layout, log } = options;
  const child = new Deno.Command(layout.postgres, {
    ...runOptions(layout),
    args: [
      "-D",
      layout.clusterDir,
      "-p",
      String(options.port),
      ...options.flags,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Read the log as long as it comes: a full pipe would block the server.
  const tail: string[] = [];
  const logDone = (async () => {
    let rest = "";
    for await (
      const chunk of child.stderr.pipeThrough(new TextDecoderStream())
    ) {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop()!;
      for (const line of lines.filter((l) => l.trim())) {
        log.debug("postgres_log", { message: line.trim() });
        tail.push(line);
        if (tail.length > 20) tail.shift();
      }
    }
  })().catch(() => {});
  live.add(child);
  let status: Deno.CommandStatus | undefined;
  const exited = child.status.then((s) => {
    live.delete(child);
    return status = s;
  });
  const send = (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch {
      // Exited meanwhile.
    }
  };
  const within = (ms: number) =>
    Promise.race([exited.then(() => true), sleep(ms).then(() => false)]);
  let stopping: Promise<void> | undefined;
  const postmaster: Postmaster = {
    pid: child.pid,
    exited,
    stop: () =>
      stopping ??= (async () => {
        if (status) return;
        send("SIGINT");
        if (await within(FAST_STOP_MS)) return;
        log.warn("postgres_stop_immediate", { pid: child.pid });
        send("SIGQUIT");
        if (await within(QUIT_STOP_MS)) return;
        log.warn("postgres_stop_killed", { pid: child.pid });
        send("SIGKILL");
        await exited;
      })(),
  };
  const deadline = Date.now() + (options.readyMs ?? 60_000);
  while (true) {
    if (status) {
      await Promise.race([logDone, sleep(500)]);
      const fatal = tail.findLast((l) => /FATAL|PANIC/.test(l)) ?? tail.at(-1);
      throw new Error(
        `PostgreSQL exited at start (${described(status)})${
          fatal ? `: ${fatal.replace(/^.*?(FATAL|PANIC):\s*/, "")}` : ""
        }`,
      );
    }
    if (options.abort?.aborted || Date.now() > deadline) {
      await postmaster.stop();
      options.abort?.throwIfAborted();
      throw new Error("PostgreSQL was not ready in time");
    }
    const lines = (await Deno.readTextFile(
      `${layout.clusterDir}/postmaster.pid`,
    ).catch(() => "")).split("\n");
    // Line 8 of the lock file is the server's state; "ready" once it
    // accepts connections.
    if (Number(lines[0]) === child.pid && lines[7]?.trim() === "ready") {
      return postmaster;
    }
    await sleep(20);
  }
}
