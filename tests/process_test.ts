/**
 * End to end: `deno run -A main.ts` as a user starts it. With no
 * DATABASE_URL it runs its own PostgreSQL in DATA_DIR, refuses a second
 * process on the same directory, and on SIGTERM stops everything and exits 0;
 * with DATABASE_URL it uses that database.
 */
import assert from "node:assert/strict";
import { freePort } from "../kit/postgres/embedded.ts";
import { testDatabase } from "./_db.ts";
import {
  events,
  killAll,
  postgresProcesses,
  ROOT,
  startMain,
  waitHealthy,
} from "./_main.ts";

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
  const cluster = `${dir}/pg`;
  try {
    assert.deepEqual(await waitHealthy(main, port), {
      status: "ok",
      database: "up",
      queue: "postgres",
    });
    assert.notDeepEqual(
      await postgresProcesses(cluster),
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
    await main.stdoutDone;
    assert.ok(
      events(main).includes("postgres_stopped"),
      events(main).join(" "),
    );
    assert.deepEqual(await postgresProcesses(cluster), []);
  } finally {
    await killAll(main, cluster);
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
