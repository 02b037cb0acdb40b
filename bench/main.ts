/**
 * `deno task bench`: the benchmark of issue 6. Starts its own PostgreSQL
 * (embedded, durable defaults) or uses BENCH_DATABASE_URL, runs the
 * baselines and then every scenario on a fresh database each, prints
 * progress and a table, and writes the results as JSON.
 *
 * Options:
 *   --quick            small counts and short durations (under a minute)
 *   --soak             also the 30-minute soak (--soak-minutes N to change)
 *   --out PATH         where to write the JSON (default bench/results.json)
 *   --only a,b         run only these scenarios (the others are "skipped")
 *   --stats            load pg_stat_statements and keep each scenario's top
 *                      statements in the results (embedded cluster only)
 */
import { killAllChildren } from "./child.ts";
import {
  type Ctx,
  makePlan,
  type Scenario,
  type Shared,
  SkipScenario,
} from "./context.ts";
import {
  cpuModel,
  cpuSeconds,
  machineBusySeconds,
  machineMemoryMb,
  postgresCpuSeconds,
} from "./procfs.ts";
import { Progress } from "./progress.ts";
import {
  cpuTable,
  type Results,
  type ScenarioResult,
  table,
  targetsTable,
  writeResults,
} from "./report.ts";
import {
  type BenchServer,
  resetStatements,
  startServer,
  topStatements,
} from "./server.ts";
import { baselines } from "./baselines.ts";
import { peer } from "./scenarios/peer.ts";
import { peerPgboss } from "./scenarios/peer_pgboss.ts";
import { write } from "./scenarios/write.ts";
import { relay } from "./scenarios/relay.ts";
import { deliver } from "./scenarios/deliver.ts";
import { steady } from "./scenarios/steady.ts";
import { fairness } from "./scenarios/fairness.ts";
import { wakeup } from "./scenarios/wakeup.ts";
import { transports } from "./scenarios/transports.ts";
import { consoleApis, consoleSplitApis } from "./scenarios/console.ts";
import { split, splitJetstream } from "./scenarios/split.ts";
import { memory } from "./scenarios/memory.ts";
import { soak } from "./scenarios/soak.ts";
import { connect } from "../lib/db/connect.ts";

const SCENARIOS: [string, Scenario][] = [
  ["baseline", baselines],
  ["peer", peer],
  ["peer_pgboss", peerPgboss],
  ["write", write],
  ["relay", relay],
  ["deliver", deliver],
  ["steady", steady],
  ["fairness", fairness],
  ["wakeup", wakeup],
  ["transports", transports],
  ["split", split],
  ["split_jetstream", splitJetstream],
  ["console", consoleApis],
  ["console_split", consoleSplitApis],
  ["memory", memory],
  ["soak", soak],
];

function option(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

const quick = Deno.args.includes("--quick");
const withSoak = Deno.args.includes("--soak") ||
  option("--soak-minutes") !== undefined;
const soakMinutes = Number(option("--soak-minutes") ?? 30);
const out = option("--out") ??
  new URL("./results.json", import.meta.url).pathname;
const only = option("--only")?.split(",");
const stats = Deno.args.includes("--stats");
for (const name of only ?? []) {
  if (!SCENARIOS.some(([n]) => n === name)) {
    console.error(
      `unknown scenario ${name}; known: ${
        SCENARIOS.map(([n]) => n).join(", ")
      }`,
    );
    Deno.exit(2);
  }
}

const plan = makePlan(quick, soakMinutes);
const progress = new Progress();
const results: Results = {
  version: 1,
  mode: quick ? "quick" : "full",
  startedAt: new Date().toISOString(),
  machine: {},
  code: await codeVersion(),
  method: [
    "one PostgreSQL for the run; a fresh database cloned from a migrated template per scenario (dropped after)",
    "baselines and scenarios use the same client library (postgres.js) on the same server in the same run",
    "closed-loop figures count operations finished in the measured window, after a warm-up",
    "durations of drains are read on the server clock (clock_timestamp at go, the last finishing timestamp)",
    "latencies are read in the bench process with performance.now()",
    "cpu: /proc user+system seconds of this process, of the worker processes, and of the postmaster with all its children",
  ],
  scenarios: {},
};

let server: BenchServer | undefined;
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  cleaning ??= (async () => {
    await killAllChildren();
    await server?.stop();
  })();
// Once stopping, an error from a pool whose server went away (postgres.js
// on a closed socket) must not end the process before the cleanup has.
globalThis.addEventListener("error", (event) => {
  if (cleaning) event.preventDefault();
});
globalThis.addEventListener("unhandledrejection", (event) => {
  if (cleaning) event.preventDefault();
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => {
    progress.note(`${signal}: stopping children and PostgreSQL`);
    cleanup().finally(() => Deno.exit(130));
  });
}

let failed = false;
try {
  progress.step("starting PostgreSQL and migrating the template");
  server = await startServer({ stats });
  results.machine = {
    cores: navigator.hardwareConcurrency,
    loadAverageAtStart: Deno.loadavg(),
    memoryMb: machineMemoryMb(),
    cpuModel: cpuModel(),
    os: `${Deno.build.os} ${Deno.osRelease()} ${Deno.build.arch}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    postgres: {
      ...server.settings,
      embedded: server.embedded,
      statementStats: server.stats,
    },
  };
  const shared: Shared = { baselines: new Map(), workerPeakMb: {} };
  for (const [name, scenario] of SCENARIOS) {
    const skip = (only && !only.includes(name)) ||
      (name === "soak" && !withSoak);
    if (skip) {
      results.scenarios[name] = {
        status: "skipped",
        seconds: 0,
        params: name === "soak" ? { reason: "runs only with --soak" } : {},
        figures: [],
      };
      continue;
    }
    results.scenarios[name] = await run(server, name, scenario, shared);
    if (results.scenarios[name].status === "failed") failed = true;
  }
} catch (error) {
  failed = true;
  progress.note(`benchmark failed: ${(error as Error).stack ?? error}`);
} finally {
  await cleanup();
}
results.finishedAt = new Date().toISOString();
await writeResults(out, results);
console.log(
  `\n${table(results)}\n\n${targetsTable(results)}\n\n${
    cpuTable(results)
  }\n\nresults: ${out}`,
);
Deno.exit(failed ? 1 : 0);

async function run(
  server: BenchServer,
  name: string,
  scenario: Scenario,
  shared: Shared,
): Promise<ScenarioResult> {
  progress.step(name);
  let workerCpu = 0;
  const ctx: Ctx = {
    server,
    plan,
    progress,
    shared,
    params: {},
    notes: [],
    addWorkerCpu: (s) => workerCpu += s,
    cpuNow: () => {
      const now: Record<string, number> = { bench: cpuSeconds(Deno.pid) ?? 0 };
      const pg = server.postmasterPid
        ? postgresCpuSeconds(server.postmasterPid)
        : null;
      if (pg !== null) now.postgres = pg;
      return now;
    },
  };
  const pgBefore = server.postmasterPid
    ? postgresCpuSeconds(server.postmasterPid)
    : null;
  const selfBefore = cpuSeconds(Deno.pid) ?? 0;
  const busyBefore = machineBusySeconds();
  const t0 = performance.now();
  const result: ScenarioResult = {
    status: "ok",
    seconds: 0,
    params: {},
    figures: [],
  };
  const admin = server.stats ? connect(server.adminUrl, { max: 1 }) : undefined;
  try {
    if (admin) await resetStatements(admin);
    result.figures = await scenario(ctx);
  } catch (error) {
    if (error instanceof SkipScenario) {
      result.status = "skipped";
      ctx.params = { ...ctx.params, reason: error.message };
    } else {
      result.status = "failed";
      result.error = (error as Error).message;
      progress.note(`${name} failed: ${(error as Error).stack ?? error}`);
    }
    await killAllChildren();
  }
  const wall = (performance.now() - t0) / 1000;
  const pgAfter = server.postmasterPid
    ? postgresCpuSeconds(server.postmasterPid)
    : null;
  result.seconds = Math.round(wall * 10) / 10;
  result.params = ctx.params;
  if (ctx.notes.length) result.notes = ctx.notes;
  const benchSeconds = (cpuSeconds(Deno.pid) ?? 0) - selfBefore;
  const postgresSeconds = pgBefore !== null && pgAfter !== null
    ? pgAfter - pgBefore
    : null;
  const busyAfter = machineBusySeconds();
  result.cpu = {
    wallSeconds: result.seconds,
    benchSeconds,
    workerSeconds: workerCpu,
    postgresSeconds,
    otherSeconds:
      busyBefore !== null && busyAfter !== null && postgresSeconds !== null
        ? Math.max(
          0,
          busyAfter - busyBefore - benchSeconds - workerCpu - postgresSeconds,
        )
        : null,
    loadAverage: Deno.loadavg()[0],
  };
  if (admin) {
    // Statements of every database of the run; the scenario's database is gone.
    result.statements = await topStatements(admin).catch(() => []);
    await admin.end();
  }
  progress.note(`${name}: ${result.status} in ${result.seconds} s`);
  return result;
}

/**
 * The commit measured and the measured code's files changed on top of it
 * (the modules are loaded once at start, so this is what ran).
 */
async function codeVersion(): Promise<Results["code"]> {
  const git = async (...args: string[]) => {
    try {
      const out = await new Deno.Command("git", {
        args,
        cwd: new URL("..", import.meta.url).pathname,
        stdout: "piped",
        stderr: "null",
      }).output();
      return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
    } catch {
      return null;
    }
  };
  const changed = await git(
    "status",
    "--porcelain",
    "--",
    "lib",
    "services",
    "migrations",
    "bakery.ts",
    "config.ts",
    "bench",
  );
  return {
    commit: await git("rev-parse", "HEAD"),
    changed: changed ? changed.split("\n").map((l) => l.trim()) : [],
  };
}
