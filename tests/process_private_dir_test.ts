/**
 * The two commands from any folder: a checkout inside a private folder (mode
 * 0700, as a root home is) starts with `deno task start`, serves, stops
 * cleanly and starts again on its data, and its test runner runs a test file
 * with its temporary files in a private folder too. As root, PostgreSQL runs
 * as the system user `postgres`, which cannot enter such a folder: the
 * binaries and the cluster have to be where it can (docs/operations.md).
 */
import assert from "node:assert/strict";
import { freePort } from "../kit/postgres/embedded.ts";
import { removeDataDir, ROOT_HOME } from "../kit/postgres/embedded_layout.ts";
import {
  events,
  killAll,
  type Main,
  postgresProcesses,
  ROOT,
  startMain,
  stopWithin,
  waitHealthy,
} from "./_main.ts";

/** Not copied: history, installed packages, data, test output. */
const SKIPPED = new Set([".git", "node_modules", ".data", "tests/artifacts"]);

/** Copies the checkout's files to `to`, as a clone would have them. */
async function copyCheckout(from: string, to: string, rel = "") {
  await Deno.mkdir(`${to}/${rel}`, { recursive: true });
  for await (const entry of Deno.readDir(`${from}/${rel}`)) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (SKIPPED.has(path)) continue;
    if (entry.isDirectory) await copyCheckout(from, to, path);
    else if (entry.isFile) {
      await Deno.copyFile(`${from}/${path}`, `${to}/${path}`);
    }
  }
}

async function run(cmd: string, args: string[], cwd: string, env = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

async function uidOfPostgres(): Promise<number> {
  return Number((await run("id", ["-u", "postgres"], "/")).stdout.trim());
}

/** Clusters in ROOT_HOME that belong to a data directory under `prefix`. */
async function clustersFor(prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT_HOME}/clusters`)) {
    const dataDir = await Deno.readTextFile(
      `${ROOT_HOME}/clusters/${entry.name}/data_dir`,
    ).catch(() => "");
    if (dataDir.startsWith(prefix)) found.push(entry.name);
  }
  return found;
}

/** Starts main.ts in `app` on its default data directory, until healthy. */
async function startIn(app: string, port: number): Promise<Main> {
  const main = startMain(
    { PORT: String(port), DATABASE_URL: "", DATA_DIR: ".data" },
    { cwd: app },
  );
  try {
    assert.deepEqual(await waitHealthy(main, port), {
      status: "ok",
      database: "up",
      queue: "postgres",
    });
  } catch (error) {
    await killAll(main);
    throw error;
  }
  return main;
}

Deno.test("process: deno task start and deno task test work from a private (0700) folder", async () => {
  const home = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-private-home-" }),
  );
  await Deno.chmod(home, 0o700);
  const app = `${home}/outbox-bakery`;
  let main: Main | undefined;
  let cluster: string | undefined;
  try {
    await copyCheckout(ROOT, app);
    // As after a clone: the packages come from Deno's cache, offline.
    const install = await run(Deno.execPath(), ["install"], app);
    assert.equal(install.code, 0, install.stderr);

    const port = await freePort();
    main = await startIn(app, port);
    cluster = await Deno.realPath(`${app}/.data/pg`);
    if (Deno.uid() === 0) {
      // Where docs/operations.md says: the cluster in ROOT_HOME, owned by postgres,
      // linked from the data directory; the binaries copied there too.
      assert.ok(
        (await Deno.lstat(`${app}/.data/pg`)).isSymlink,
        "DATA_DIR/pg links to the cluster",
      );
      assert.match(cluster, new RegExp(`^${ROOT_HOME}/clusters/[0-9a-f]+/pg$`));
      assert.equal((await Deno.stat(cluster)).uid, await uidOfPostgres());
      const [postmaster] = await postgresProcesses(cluster);
      assert.match(postmaster, new RegExp(` ${ROOT_HOME}/postgres-[^/]+/bin/`));
    }
    const first = await stopWithin(main, "SIGTERM", 10_000);
    assert.equal(first?.code, 0, await main.stderr);
    assert.deepEqual(await postgresProcesses(cluster), []);

    // The same data again: no new cluster.
    main = await startIn(app, port);
    const second = await stopWithin(main, "SIGTERM", 10_000);
    assert.equal(second?.code, 0, await main.stderr);
    await main.stdoutDone;
    const started = main.lines.find((l) => l.event === "postgres_started");
    assert.equal(started?.fresh, false, events(main).join(" "));
    assert.deepEqual(await postgresProcesses(cluster), []);

    // The test runner, its temporary cluster in a private folder as well.
    await Deno.mkdir(`${home}/tmp`, { mode: 0o700 });
    const tests = await run(
      Deno.execPath(),
      // Type checking is not what is tested here, and costs seconds.
      ["run", "-A", "tests/run.ts", "--no-check", "tests/health_test.ts"],
      app,
      { TMPDIR: `${home}/tmp` },
    );
    assert.equal(tests.code, 0, tests.stdout + tests.stderr);
    assert.match(tests.stdout, /\n\d+ passed, 0 failed(, \d+ skipped.*)?\n/);
    // It removed its cluster, wherever it was.
    const left = [...Deno.readDirSync(`${home}/tmp`)].map((e) => e.name);
    assert.deepEqual(left.filter((n) => n.startsWith("bakery-test-")), []);
    if (Deno.uid() === 0) {
      assert.deepEqual(await clustersFor(`${home}/tmp/`), []);
    }
  } finally {
    if (main) await killAll(main, cluster);
    await removeDataDir(`${app}/.data`);
    await Deno.remove(home, { recursive: true });
  }
});
