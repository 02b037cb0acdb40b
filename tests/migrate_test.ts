import assert from "node:assert/strict";
import { emptyDatabase, withTestDatabase } from "./_db.ts";
import { connect } from "../lib/db/connect.ts";
import { applyMigrations } from "../lib/db/migrate.ts";
import {
  CORE_MADE_BY,
  coreMigrationNames,
  HISTORY,
  migrate,
  MigrationError,
  MIGRATIONS_DIR,
  readMigrations,
} from "../kit/postgres/migrate.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { messagingMigrations } from "../lib/schema.ts";

Deno.test("migrations apply on an empty database, then re-running is a no-op", async () => {
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 2 });
    try {
      const files = await readMigrations(MIGRATIONS_DIR);
      assert.ok(files.length >= 1);
      const { logger } = memoryLogger();
      const first = await migrate(sql, logger);
      // The core's later files go right after the app's file that made the
      // core's first version.
      const made = files.findIndex((f) => f.name === CORE_MADE_BY);
      assert.deepEqual(first, [
        ...files.slice(0, made + 1).map((f) => f.name),
        ...await coreMigrationNames(),
        ...files.slice(made + 1).map((f) => f.name),
      ]);
      const second = await migrate(sql, logger);
      assert.deepEqual(second, []);
      const [{ count }] =
        await sql`select count(*)::int as count from public.schema_migrations`;
      assert.equal(count, files.length);
    } finally {
      await sql.end();
    }
  });
});

Deno.test("two processes migrating at once apply each file once", async () => {
  await emptyDatabase(async (url) => {
    const script = `
      import { connect } from "./lib/db/connect.ts";
      import { migrate } from "./kit/postgres/migrate.ts";
      import { createLogger } from "./lib/log/mod.ts";
      const sql = connect(Deno.env.get("URL"), { max: 1 });
      const applied = await migrate(sql, createLogger("error"));
      console.log(JSON.stringify(applied));
      await sql.end();`;
    const run = () =>
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "--ext=ts", script],
        env: { URL: url },
        stdout: "piped",
        stderr: "piped",
      }).output();
    const [a, b] = await Promise.all([run(), run()]);
    assert.equal(a.code, 0, new TextDecoder().decode(a.stderr));
    assert.equal(b.code, 0, new TextDecoder().decode(b.stderr));
    const appliedA: string[] = JSON.parse(new TextDecoder().decode(a.stdout));
    const appliedB: string[] = JSON.parse(new TextDecoder().decode(b.stdout));
    const files = (await readMigrations(MIGRATIONS_DIR)).map((f) => f.name);
    const core = await coreMigrationNames();
    // Every file applied by exactly one of the two processes.
    assert.deepEqual(
      [...appliedA, ...appliedB].sort(),
      [...files, ...core].sort(),
    );
    const sql = connect(url, { max: 1 });
    const rows =
      await sql`select name from public.schema_migrations order by name`;
    await sql.end();
    assert.deepEqual(rows.map((r) => r.name), files);
  });
});

Deno.test("a failing migration leaves the database as it was and names the file", async () => {
  await withTestDatabase(async ({ sql }) => {
    const { logger } = memoryLogger();
    const bad = [{
      name: "9999_broken.sql",
      sql: "create table public.half_done (id int); select no_such_function();",
    }];
    await assert.rejects(
      () => migrate(sql, logger, bad),
      (e: unknown) =>
        e instanceof MigrationError &&
        e.message.startsWith("migration 9999_broken.sql failed:"),
    );
    const [t] = await sql`select to_regclass('public.half_done') as t`;
    assert.equal(t.t, null);
    const [m] =
      await sql`select count(*)::int as n from public.schema_migrations where name = '9999_broken.sql'`;
    assert.equal(m.n, 0);
  });
});

Deno.test("a database migrated before the core had its own migrations takes the core's later ones", async () => {
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 2 });
    try {
      const { logger } = memoryLogger();
      // As the app's files alone left it: the core's objects, no history;
      // and one inbox without retention's index, as one made later had.
      const files = await readMigrations(MIGRATIONS_DIR);
      const made = files.findIndex((f) => f.name === CORE_MADE_BY);
      await applyMigrations(sql, logger, HISTORY, files.slice(0, made + 1));
      await sql`drop index kitchen.inbox_received_by_time`;
      const [{ n: inboxes }] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_class where relname = 'inbox'`;
      assert.deepEqual(await migrate(sql, logger), [
        ...await coreMigrationNames(),
        ...files.slice(made + 1).map((f) => f.name),
      ]);
      const names = await sql<{ name: string }[]>`
        select name from public.messaging_migrations order by name`;
      assert.deepEqual(
        names.map((r) => r.name),
        (await messagingMigrations()).map((f) => f.name).sort(),
      );
      // Every inbox has retention's index (lib/inbox/migrations/0002).
      const [{ n: indexed }] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_class
         where relname = 'inbox_received_by_time'`;
      assert.ok(inboxes > 0);
      assert.equal(indexed, inboxes);
    } finally {
      await sql.end();
    }
  });
});
