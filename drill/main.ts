/**
 * `deno task drill`: prove on this machine that a paid order is never lost
 * and never applied twice. Starts its own PostgreSQL (and nats-servers with
 * `--transport jetstream`), the bakery and its workers, runs shoppers and a
 * seeded schedule of faults, lets the system settle, and has the checker
 * read the databases. Prints a scorecard, writes drill.json and drill.html,
 * and exits 1 when anything was lost, doubled, out of order or stuck (2 on
 * a bad command line).
 */
import { freePort } from "../kit/postgres/embedded.ts";
import { createLogger } from "../lib/log/mod.ts";
import { check } from "./checker.ts";
import type { Rig } from "./faults.ts";
import { findNatsServer, NatsNodes } from "./nats.ts";
import { parseOptions, USAGE, UsageError } from "./options.ts";
import { Child, Postgres, SETTINGS, waitHealthy } from "./processes.ts";
import { type DrillResult, table, timeline, writeJson } from "./report.ts";
import { writeHtml } from "./report_html.tsx";
import { runDrill } from "./run.ts";
import { planFaults } from "./schedule.ts";
import { Shopper } from "./shoppers.ts";
import { Stores } from "./stores.ts";

let options;
try {
  options = parseOptions(Deno.args);
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`${error.message}\n\n${USAGE}`);
  Deno.exit(2);
}
const natsBinary = options.transport === "jetstream"
  ? await findNatsServer()
  : null;
if (options.transport === "jetstream" && !natsBinary) {
  console.error(
    "--transport jetstream needs nats-server on PATH (Debian: apt-get install nats-server); none was found",
  );
  Deno.exit(1);
}

const began = Date.now();
await Deno.mkdir(options.out, { recursive: true });
const work = await Deno.makeTempDir({ prefix: "bakery-drill-" });
const logPath = `${options.out}/drill.log`;
await Deno.writeTextFile(logPath, "");
// The drill's own PostgreSQL logs its deaths and restarts: expected here.
const log = createLogger(
  "info",
  (line) => Deno.writeTextFileSync(logPath, line + "\n", { append: true }),
);

let postgres: Postgres | undefined;
let nats: NatsNodes | undefined;
let stores: Stores | undefined;
const children: Child[] = [];
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  cleaning ??= (async () => {
    for (const child of children.reverse()) await child.stop();
    await stores?.close();
    await nats?.stop();
    await postgres?.stop();
    await Deno.remove(work, { recursive: true }).catch(() => {});
  })();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => {
    console.error(`\n${signal}: stopping the drill's processes`);
    cleanup().finally(() => Deno.exit(130));
  });
}
// A pool whose server the drill just killed may throw outside any await.
globalThis.addEventListener("unhandledrejection", (e) => e.preventDefault());

let exitCode = 1;
try {
  console.error(`drill: seed ${options.seed}; starting PostgreSQL`);
  postgres = await Postgres.start(`${work}/pg`, log);
  const natsNodes = options.cluster ? 3 : 1;
  if (natsBinary) {
    console.error(`drill: starting ${natsNodes} nats-server(s)`);
    nats = await NatsNodes.start(natsBinary, natsNodes);
  }
  const appPort = await freePort();
  const env = {
    ...SETTINGS,
    DATABASE_URL: postgres.url,
    HOST: "127.0.0.1",
    QUEUE: options.transport,
    SERVICE_DATABASES: options.split ? "split" : "shared",
    NATS_URL: nats?.url ?? "nats://127.0.0.1:1",
    NATS_STREAM: "DRILL",
    NATS_REPLICAS: String(options.cluster ? 3 : 1),
  };
  const app = new Child("app", "main.ts", {
    ...env,
    PORT: String(appPort),
    DATA_DIR: `${work}/app`,
    WORKERS: options.workers > 0 ? "off" : "on",
  }, `${options.out}/app.log`);
  children.push(app);
  console.error("drill: starting the bakery");
  await app.start();
  await waitHealthy(appPort);
  const workers = Array.from(
    { length: options.workers },
    (_, i) =>
      new Child(
        `worker ${i + 1}`,
        "workers/main.ts",
        env,
        `${options.out}/worker-${i + 1}.log`,
      ),
  );
  for (const worker of workers) {
    children.push(worker);
    await worker.start();
  }
  const base = `http://127.0.0.1:${appPort}/`;
  const shoppers = Array.from(
    { length: options.shoppers },
    (_, i) => new Shopper(base, i),
  );
  for (const shopper of shoppers) await shopper.signIn();
  if (options.breakInbox) {
    for (const s of shoppers) await s.setFaults({ crmSkipsInbox: true });
  }
  stores = Stores.open(postgres.url, options.split);
  const rig: Rig = { postgres, app, appPort, workers, nats, shoppers };
  const plan = planFaults({
    seed: options.seed,
    durationS: options.durationS,
    kinds: options.faults,
    workers: options.workers,
    natsNodes,
  });
  console.error(
    `drill: ${options.durationS} s at ${options.rate} orders/s, ${plan.length} faults: ${
      plan.map((f) => `${f.atS}s ${f.kind}`).join(", ") || "none"
    }`,
  );
  const run = await runDrill({
    rig,
    stores,
    plan,
    durationS: options.durationS,
    rate: options.rate,
    settleS: options.settleS,
  });
  console.error("drill: checking the databases");
  const verdict = await check(stores, run.record.accepted);
  const faultsByKind: Record<string, number> = {};
  for (const e of run.events) {
    faultsByKind[e.kind] = (faultsByKind[e.kind] ?? 0) + 1;
  }
  const { orders, ...counts } = verdict;
  const { out: _out, ...shown } = options;
  const result: DrillResult = {
    version: 1,
    passed: verdict.lost + verdict.doubled + verdict.outOfOrder +
            verdict.stuck === 0 && !run.events.some((e) => e.error),
    options: shown,
    startedAt: new Date(began).toISOString(),
    seconds: {
      load: Math.round(run.loadSeconds),
      settle: Math.round(run.settleSeconds),
      total: Math.round((Date.now() - began) / 1000),
    },
    load: {
      placed: run.record.placed,
      accepted: run.record.accepted.length,
      unanswered: run.record.unanswered,
      failures: run.record.failures,
    },
    faults: run.events,
    faultsByKind,
    sweptDeadLetters: run.swept,
    settled: run.settled,
    verdict: counts,
    timeline: timeline(run.startMs, run.loadSeconds, orders, run.samples),
  };
  await writeJson(`${options.out}/drill.json`, result);
  await writeHtml(`${options.out}/drill.html`, result);
  for (const e of run.events.filter((e) => e.error)) {
    console.error(`fault ${e.kind} failed: ${e.error}`);
  }
  console.log(`\n${table(result)}\n`);
  console.log(
    `report: ${options.out}/drill.html, ${options.out}/drill.json; logs in ${options.out}/`,
  );
  exitCode = result.passed ? 0 : 1;
} catch (error) {
  console.error(`drill failed: ${(error as Error).stack ?? error}`);
  exitCode = 1;
} finally {
  await cleanup();
}
Deno.exit(exitCode);
