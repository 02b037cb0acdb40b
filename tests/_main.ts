/**
 * The whole program as a user starts it, for end-to-end tests: `deno run -A
 * main.ts` in a folder, its log read as it comes, `/health` polled, and the
 * PostgreSQL processes of a cluster found the way `ps` would (independently
 * of the program's own bookkeeping), so that a test can say none is left.
 */

/** The repository this test runs from. */
export const ROOT = new URL("..", import.meta.url).pathname;

export interface Main {
  child: Deno.ChildProcess;
  /** The JSON log lines written so far (stdout), parsed. */
  lines: Record<string, unknown>[];
  /** Everything on stderr, once the process has ended. */
  stderr: Promise<string>;
  /** Settles when stdout has ended. */
  stdoutDone: Promise<void>;
}

/**
 * Starts `deno run -A main.ts` in `cwd` with `env`. With `ownGroup`, in a
 * process group of its own (through setsid), so that a test can kill the
 * program and its PostgreSQL at once as a power cut would.
 */
export function startMain(
  env: Record<string, string>,
  options: { cwd?: string; ownGroup?: boolean } = {},
): Main {
  return startDeno(["run", "-A", "main.ts"], env, options);
}

/**
 * Starts `deno task worker` with `env`, in a process group of its own: the
 * task runs `deno run` as a child, and a kill of the group reaches both.
 */
export function startWorker(env: Record<string, string>): Main {
  return startDeno(["task", "worker"], env, { ownGroup: true });
}

/** Starts `deno <args>`, its stdout read as JSON log lines. */
function startDeno(
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string; ownGroup?: boolean },
): Main {
  const child = new Deno.Command(
    options.ownGroup ? "setsid" : Deno.execPath(),
    {
      args: options.ownGroup ? [Deno.execPath(), ...args] : args,
      cwd: options.cwd ?? ROOT,
      env: { LOG_LEVEL: "info", ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    },
  ).spawn();
  const lines: Record<string, unknown>[] = [];
  const stdoutDone = (async () => {
    let rest = "";
    for await (
      const chunk of child.stdout.pipeThrough(new TextDecoderStream())
    ) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      for (const part of parts.filter((p) => p.trim())) {
        try {
          lines.push(JSON.parse(part));
        } catch {
          lines.push({ text: part });
        }
      }
    }
  })();
  return {
    child,
    lines,
    stderr: new Response(child.stderr).text(),
    stdoutDone,
  };
}

/**
 * The log lines at `warn` and above, and every line of the last `tail`, as
 * text: what a failed test prints to say what the program was doing.
 */
export function logTail(main: Main, tail = 40): string {
  const keep = main.lines.filter((l, i) =>
    i >= main.lines.length - tail || l.level === "warn" || l.level === "error"
  );
  return keep.map((l) => JSON.stringify(l)).join("\n");
}

/** The events of the log lines so far, in order. */
export function events(main: Main): string[] {
  return main.lines.map((l) => String(l.event));
}

/**
 * Polls `GET /health` every 100 ms until it answers 200; fails when the
 * process exits first or after `ms`.
 */
export async function waitHealthy(main: Main, port: number, ms = 60_000) {
  let exited = false;
  main.child.status.then(() => exited = true);
  const deadline = Date.now() + ms;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (exited) {
      throw new Error(`main.ts exited early: ${await main.stderr}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      const body = await res.text();
      if (res.status === 200) return JSON.parse(body);
      last = `${res.status} ${body}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no healthy answer in ${ms} ms; last: ${last}`);
}

/** Waits up to `ms` for `check`, polling every 25 ms. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 30_000,
) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Sends `signal` and waits at most `ms` for the exit; the status, or
 * undefined when the process was still running then.
 */
export async function stopWithin(
  main: Main,
  signal: Deno.Signal,
  ms: number,
): Promise<Deno.CommandStatus | undefined> {
  main.child.kill(signal);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const status = await Promise.race([
    main.child.status,
    new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), ms)),
  ]);
  clearTimeout(timer);
  return status;
}

/** The postmaster's pid, from the cluster's lock file. */
export async function postmasterPid(clusterDir: string): Promise<number> {
  const text = await Deno.readTextFile(`${clusterDir}/postmaster.pid`);
  return Number(text.split("\n")[0]);
}

/**
 * Running processes of the cluster in `clusterDir` (a real path): the
 * postmaster names it on its command line; every process of it, children
 * included, works in it.
 */
export async function postgresProcesses(clusterDir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      if (/\) [ZX] /.test(stat)) continue;
      const args = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`))
        .split("\0").join(" ").trim();
      const cwd = await Deno.readLink(`/proc/${entry.name}/cwd`)
        .catch(() => "");
      if (cwd === clusterDir || args.includes(`${clusterDir} `)) {
        found.push(`${entry.name}: ${args}`);
      }
    } catch {
      // The process exited while we looked.
    }
  }
  return found;
}

/** After a test: kill the program (its group too) and the cluster's processes. */
export async function killAll(main: Main, clusterDir?: string) {
  for (const pid of [-main.child.pid, main.child.pid]) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Not a group of its own, or gone already.
    }
  }
  await main.child.status;
  await Promise.all([main.stdoutDone.catch(() => {}), main.stderr]);
  for (const line of clusterDir ? await postgresProcesses(clusterDir) : []) {
    try {
      Deno.kill(Number(line.split(":")[0]), "SIGKILL");
    } catch {
      // gone
    }
  }
}

/** Live processes in process group `pgid` (a child started in its own). */
export async function groupProcesses(pgid: number): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      // "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state !== "Z" && state !== "X" && Number(pgrp) === pgid) {
        found.push(Number(entry.name));
      }
    } catch {
      // The process exited while we looked.
    }
  }
  return found;
}
