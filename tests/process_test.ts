/**
 * End to end: `deno run -A main.ts` as a user starts it. With no
 * DATABASE_URL it runs its own PostgreSQL in DATA_DIR, refuses a second
 * process on the same directory, and on SIGTERM stops everything and exits 0;
 * with DATABASE_URL it uses that database.
 */
import assert from "node:assert/strict";
import { freePort } from "../lib/db/embedded.ts";
import { testDatabase } from "./_db.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** `deno run -A main.ts` with `env`; its output is collected as text. */
function startMain(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: ROOT,
    env: { LOG_LEVEL: "info", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return {
    child,
    stdout: new Response(child.stdout).text(),
    stderr: new Response(child.stderr).text(),
  };
}

type Main = ReturnType<typeof startMain>;

/**
 * Polls `GET /health` every 100 ms until it answers 200; fails when the
 * process exits first or after `ms`.
 */
async function waitHealthy(main: Main, port: number, ms = 60_000) {
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

/** Live processes whose command line names `dir`. */
async function processesIn(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`))
        .split("\0").join(" ").trim();
      if (args.includes(dir)) found.push(`${entry.name}: ${args}`);
    } catch {
      // The process exited while we looked.
    }
  }
  return found;
}

/** After a failure: kill the child and any postgres left in `dir`. */
async function killAll(main: Main, dir?: string) {
  try {
    main.child.kill("SIGKILL");
  } catch {
    // already exited
  }
  await main.child.status;
  await Promise.all([main.stdout, main.stderr]);
  for (const line of dir ? await processesIn(dir) : []) {
    try {
      Deno.kill(Number(line.split(":")[0]), "SIGKILL");
    } catch {
      // gone
    }
  }
}

Deno.test("process: embedded PostgreSQL, one owner per data dir, clean SIGTERM", async () => {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-process-" }),
  );
  const port = await freePort();
  const main = startMain({
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: "",
  });
  try {
    assert.deepEqual(await waitHealthy(main, port), {
      status: "ok",
      database: "up",
      queue: "postgres",
    });
    assert.notDeepEqual(
      await processesIn(dir),
      [],
      "postgres runs in DATA_DIR",
    );

    const second = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: ROOT,
      env: {
        DATA_DIR: dir,
        PORT: String(await freePort()),
        DATABASE_URL: "",
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(second.code, 1);
    const lines = new TextDecoder().decode(second.stderr).trim().split("\n");
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], /data directory .* is in use/);
    assert.ok(lines[0].includes(dir), lines[0]);
    // The refused process left the first one serving.
    assert.equal((await waitHealthy(main, port)).status, "ok");

    main.child.kill("SIGTERM");
    const status = await main.child.status;
    const stderr = await main.stderr;
    assert.equal(status.code, 0, stderr);
    assert.ok(
      stderr.includes(`Outbox Bakery is open at http://127.0.0.1:${port}/`),
      stderr,
    );
    const events = (await main.stdout).trim().split("\n")
      .map((line) => JSON.parse(line).event);
    assert.ok(events.includes("postgres_stopped"), events.join(" "));
    assert.deepEqual(await processesIn(dir), []);
  } finally {
    await killAll(main, dir);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("process: DATABASE_URL is used instead of an embedded cluster", async () => {
  const db = await testDatabase({ max: 1 });
  const dir = await Deno.makeTempDir({ prefix: "bakery-process-" });
  const port = await freePort();
  const main = startMain({
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: db.url,
  });
  try {
    assert.equal((await waitHealthy(main, port)).database, "up");
    // The app's pool is connected to this very database.
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
       where datname = current_database() and application_name = 'bakery'`;
    assert.ok(row.n >= 1, "the app is connected to DATABASE_URL");

    main.child.kill("SIGTERM");
    const status = await main.child.status;
    assert.equal(status.code, 0, await main.stderr);
    // No cluster in DATA_DIR: only the generated test-mode webhook secret.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), [
      "stripe_webhook_secret",
    ]);
  } finally {
    await killAll(main);
    await Deno.remove(dir, { recursive: true });
    await db.drop();
  }
});
