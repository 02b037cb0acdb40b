/**
 * A database migrated by the migrations as they were before the fold (never
 * released) is refused with one line, before anything of today's files is
 * applied to it.
 */
import assert from "node:assert/strict";
import { connect, type Sql, withDatabase } from "../lib/db/connect.ts";
import {
  migrate,
  UNRELEASED,
  UnreleasedSchemaError,
} from "../kit/postgres/migrate.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { adminUrl } from "./_db.ts";
import { ROOT } from "./_main.ts";

const EXPECTED =
  "this database was migrated by an unreleased earlier schema (0001_roles_schemas_sandboxes.sql ... 0019_broker_redrives.sql, 18 files); drop it, or delete DATA_DIR for the embedded one";

/** The names the earlier files left in public.schema_migrations. */
const EARLIER = UNRELEASED;

/**
 * A database as the earlier files left it, as far as the runner looks: their
 * rows in public.schema_migrations, and one of their objects (the platform
 * schema, which today's first file also creates).
 */
async function earlierDatabase(fn: (url: string, sql: Sql) => Promise<void>) {
  const name = `t_earlier_${Deno.pid}_${crypto.randomUUID().slice(0, 8)}`;
  await ensureDatabase(adminUrl(), name);
  const url = withDatabase(adminUrl(), name);
  const sql = connect(url, { max: 2 });
  try {
    await sql`create table public.schema_migrations (
      name text primary key,
      checksum text not null,
      applied_at timestamptz not null default now())`;
    await sql`create schema platform`;
    for (const file of EARLIER) {
      await sql`insert into public.schema_migrations (name, checksum)
        values (${file}, 'earlier')`;
    }
    await fn(url, sql);
  } finally {
    await sql.end();
    const admin = connect(adminUrl(), { max: 1 });
    await admin`drop database if exists ${admin(name)} with (force)`;
    await admin.end();
  }
}

Deno.test("migrate refuses a database of the unreleased earlier schema, and applies nothing", async () => {
  await earlierDatabase(async (_url, sql) => {
    const { logger } = memoryLogger();
    await assert.rejects(
      () => migrate(sql, logger),
      (e: unknown) =>
        e instanceof UnreleasedSchemaError && e.message === EXPECTED,
    );
    const rows =
      await sql`select name from public.schema_migrations order by name`;
    assert.deepEqual(rows.map((r) => r.name), EARLIER);
    const [{ tables }] = await sql`
      select count(*)::int as tables from pg_tables where schemaname = 'platform'`;
    assert.equal(tables, 0, "no file of today's schema was applied");
  });
});

Deno.test("deno task start on such a database stops with that one line", async () => {
  await earlierDatabase(async (url) => {
    const out = await new Deno.Command(Deno.execPath(), {
      // Quiet: on a cold cache Deno's own "Download ..." lines would come
      // before the one line this test reads.
      args: ["run", "--quiet", "-A", "main.ts"],
      cwd: ROOT,
      env: { DATABASE_URL: url, PORT: "0", LOG_LEVEL: "error" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
    assert.equal(out.code, 1);
    assert.deepEqual(lines, [`error: ${EXPECTED}`]);
  });
});
