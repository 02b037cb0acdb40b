/**
 * `deno task test`: first, with no arguments, the checks of `deno task check`
 * (format, lint, types), stopping at the first that fails; then the
 * machine's tools some tests need, installed where missing
 * (tests/_setup_tools.ts, TEST_INSTALL=off to never install); one
 * PostgreSQL for the whole run (embedded in a temporary directory, or
 * TEST_DATABASE_URL), one nats-server with JetStream (unless TEST_NATS_URL),
 * a template database migrated once, then `deno test --parallel`, TEST_JOBS
 * files at a time, each on a clone of the template (tests/_db.ts). Both
 * servers are stopped at the end however the tests went. Extra arguments go to `deno test` (a
 * file or `--filter`), and skip the checks: whoever runs one file wants its
 * answer, not the whole tree's.
 */
import { connect, type Sql, withDatabase } from "../lib/db/connect.ts";
import { startEmbedded } from "../kit/postgres/embedded.ts";
import { removeDataDir } from "../kit/postgres/embedded_layout.ts";
import { migrate } from "../kit/postgres/migrate.ts";
import { migrateMessaging } from "../lib/schema.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { createLogger } from "../lib/log/mod.ts";
import { buildIslands } from "../kit/http/islands.ts";
import { setupTools } from "./_setup_tools.ts";
import { NATS_SERVER, NatsServer } from "./_nats_server.ts";

if (Deno.args.length === 0) await staticChecks();
await setupTools();

/**
 * Files the run spends longest on, started first so that none of them is
 * left running alone at the end. The rest follow in name order.
 */
const SLOWEST = [
  "tests/core/messaging_conformance_test.ts",
  "tests/bench_quick_test.ts",
  "tests/e2e/console_walkthrough_test.ts",
  "tests/process_pay_crash_test.ts",
  "tests/fairness_test.ts",
  "tests/e2e/accessibility_test.ts",
  "tests/process_jetstream_workers_test.ts",
  "tests/drill_test.ts",
  "tests/e2e/how_it_works_test.ts",
  "tests/process_db_dies_test.ts",
  "tests/jetstream_cluster_test.ts",
  "tests/e2e/console_sandboxes_test.ts",
  "tests/jetstream_broker_lost_test.ts",
  "tests/process_crash_restart_test.ts",
];

// Test files run this many at a time (`deno test --parallel`): most of a
// file's time is waiting on PostgreSQL, a broker or a timer, so two files
// share the cores of a small machine well.
const jobs = Number(Deno.env.get("TEST_JOBS")) ||
  Math.min(4, Math.max(2, navigator.hardwareConcurrency));

const log = createLogger(
  (Deno.env.get("TEST_LOG_LEVEL") as "info" | undefined) ?? "warn",
);
const external = Deno.env.get("TEST_DATABASE_URL");
const dataDir = external
  ? undefined
  : await Deno.makeTempDir({ prefix: "bakery-test-" });
const cluster = dataDir
  ? await startEmbedded({
    dataDir,
    log,
    // A throwaway cluster: durability buys nothing here and costs seconds.
    postgresFlags: [
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      // Each file's bakery opens a few pools; several files run at once.
      `max_connections=${200 + 150 * jobs}`,
    ],
  })
  : undefined;
const adminUrl = external ?? cluster!.url;
// The JetStream tests get a nats-server of this run's own, unless
// TEST_NATS_URL names one: never the machine's, whose streams and limits
// are someone else's.
const natsUrl = Deno.env.get("TEST_NATS_URL");
const nats = !natsUrl && NATS_SERVER ? await NatsServer.start() : undefined;
const template = `bakery_template_${Deno.pid}`;
// The core's tests clone one that holds the core's schema alone.
const coreTemplate = `core_template_${Deno.pid}`;

/** Creates the template database `name` and migrates it with `apply`. */
async function makeTemplate(
  name: string,
  apply: (sql: Sql) => Promise<unknown>,
) {
  await ensureDatabase(adminUrl, name);
  const sql = connect(withDatabase(adminUrl, name), { max: 1 });
  try {
    await apply(sql);
  } finally {
    await sql.end();
  }
}

let code = 1;
try {
  await makeTemplate(template, (sql) => migrate(sql, log));
  await makeTemplate(coreTemplate, (sql) => migrateMessaging(sql, log));
  // Browser tests load the islands bundle.
  await buildIslands();
  const child = new Deno.Command(Deno.execPath(), {
    // The whole run's `deno check .` has type-checked every test already;
    // checking them again cost the run 12 s. One file run alone is still
    // checked.
    args: Deno.args.length
      ? ["test", "-A", ...Deno.args]
      : ["test", "-A", "--no-check", "--parallel", ...await testFiles()],
    env: {
      DENO_JOBS: String(jobs),
      TEST_ADMIN_URL: adminUrl,
      TEST_TEMPLATE_DB: template,
      TEST_CORE_TEMPLATE_DB: coreTemplate,
      TEST_RUN_ID: String(Deno.pid),
      ...(nats ? { TEST_NATS_URL: nats.url } : {}),
      // The tools are set up above; a test that starts this runner again
      // (process_private_dir_test.ts) must not try apt-get a second time.
      TEST_INSTALL: "off",
    },
    stdin: "null",
    stdout: "piped",
  }).spawn();
  const stopChild = () => child.kill("SIGTERM");
  Deno.addSignalListener("SIGINT", stopChild);
  // Pass the output through as it comes, keep the closing summary, and
  // gather the reasons printed for tests registered as ignored (a line
  // "skipped: <reason>", as tests/_nats.ts prints when no NATS answers).
  let tail = "";
  let line = "";
  const reasons = new Set<string>();
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    await Deno.stdout.write(chunk);
    const text = decoder.decode(chunk, { stream: true });
    tail = (tail + text).slice(-4000);
    const lines = (line + text).split("\n");
    line = lines.pop()!;
    for (const l of lines) {
      const skipped = plain(l).match(/^skipped: (.+)$/);
      if (skipped) reasons.add(skipped[1].trim());
    }
  }
  code = (await child.status).code;
  // deno test ends with "ok | 12 passed | 0 failed | 2 ignored"; CI tools
  // also read the plain form on a line of its own, ignored tests counted
  // as skipped, with the reasons given.
  const summary = plain(tail).match(
    /(\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?(?: \| (\d+) ignored)?/,
  );
  if (summary) {
    const why = reasons.size > 0 ? ` (${[...reasons].join("; ")})` : "";
    console.log(
      `\n${summary[1]} passed, ${summary[2]} failed, ${
        summary[3] ?? 0
      } skipped${why}`,
    );
  }
  Deno.removeSignalListener("SIGINT", stopChild);
} catch (error) {
  console.error(`test setup failed: ${(error as Error).message}`);
} finally {
  if (external) {
    const admin = connect(adminUrl, { max: 1 });
    for (const name of [template, coreTemplate]) {
      await admin`drop database if exists ${admin(name)} with (force)`.catch(
        () => {},
      );
    }
    // Test files drop their own databases; a crashed file may leave one.
    const leftovers = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`t_${Deno.pid}_%`}`;
    for (const { datname } of leftovers) {
      await admin`drop database if exists ${admin(datname)} with (force)`.catch(
        () => {},
      );
    }
    await admin.end();
  }
  await nats?.stop();
  await cluster?.stop();
  if (dataDir) await removeDataDir(dataDir);
}
Deno.exit(code);

/** Every test file under tests/, the slowest first. */
async function testFiles(): Promise<string[]> {
  const files: string[] = [];
  const visit = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await visit(path);
      else if (/_test\.tsx?$/.test(entry.name)) files.push(path);
    }
  };
  // From wherever the run was started.
  const root = new URL("..", import.meta.url).pathname;
  await visit(`${root}tests`);
  const rank = (f: string) => {
    const i = SLOWEST.indexOf(f.slice(root.length));
    return i < 0 ? SLOWEST.length : i;
  };
  return files.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** `text` without its colour codes. */
function plain(text: string): string {
  // deno-lint-ignore no-control-regex -- the escape starts a colour code
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

/**
 * `deno fmt --check`, `deno lint` and `deno check .`, as `deno task check`
 * runs them, before PostgreSQL starts: a formatting slip fails in seconds
 * instead of after the suite. Exits with the failing step's code.
 */
async function staticChecks(): Promise<void> {
  const steps: [string[], string][] = [
    [["fmt", "--check"], "run 'deno fmt' to format the files above"],
    [["lint"], "fix the lint findings above"],
    // Quiet: its errors still show, its line per checked file does not.
    [["check", "--quiet", "."], "fix the type errors above"],
  ];
  console.log("test: deno fmt --check, deno lint, deno check . first");
  for (const [args, fix] of steps) {
    const { code } = await new Deno.Command(Deno.execPath(), {
      args,
      stdin: "null",
    }).spawn().status;
    if (code !== 0) {
      console.error(
        `\ntest: 'deno ${args.join(" ")}' failed, so no test ran: ${fix} ` +
          `(or run one file: deno task test tests/<file>_test.ts)`,
      );
      Deno.exit(code);
    }
  }
}
