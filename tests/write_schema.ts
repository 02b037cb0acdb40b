/**
 * `deno task schema`: rewrites migrations/schema.sql from a freshly migrated
 * database. It migrates a new database (on an embedded PostgreSQL in a
 * temporary directory, or on TEST_DATABASE_URL's server), dumps its schema
 * (kit/postgres/schema_dump.ts) and drops it again. Review the change to the file
 * with the migration that made it; tests/schema_test.ts fails until the
 * file and a migrated database agree.
 */
import { connect, withDatabase } from "../lib/db/connect.ts";
import { startEmbedded } from "../kit/postgres/embedded.ts";
import { removeDataDir } from "../kit/postgres/embedded_layout.ts";
import { migrate } from "../kit/postgres/migrate.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { dumpSchema, SCHEMA_FILE } from "../kit/postgres/schema_dump.ts";
import { createLogger } from "../lib/log/mod.ts";

const log = createLogger("warn");
const external = Deno.env.get("TEST_DATABASE_URL");
const dataDir = external
  ? undefined
  : await Deno.makeTempDir({ prefix: "bakery-schema-" });
let code = 1;
try {
  const cluster = dataDir
    ? await startEmbedded({
      dataDir,
      log,
      postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off"],
    })
    : undefined;
  try {
    const adminUrl = external ?? cluster!.url;
    const name = `bakery_schema_${Deno.pid}`;
    await ensureDatabase(adminUrl, name);
    const sql = connect(withDatabase(adminUrl, name), { max: 1 });
    try {
      await migrate(sql, log);
      const dump = await dumpSchema(sql);
      const before = await Deno.readTextFile(SCHEMA_FILE).catch(() => "");
      await Deno.writeTextFile(SCHEMA_FILE, dump);
      const path = SCHEMA_FILE.pathname.split("/").slice(-2).join("/");
      console.log(
        before === dump
          ? `${path} is up to date`
          : `${path} rewritten: review its diff with the migration that made it`,
      );
      code = 0;
    } finally {
      await sql.end();
      const admin = connect(adminUrl, { max: 1 });
      await admin`drop database if exists ${admin(name)} with (force)`;
      await admin.end();
    }
  } finally {
    await cluster?.stop();
  }
} catch (error) {
  console.error(`error: ${(error as Error).message}`);
} finally {
  if (dataDir) await removeDataDir(dataDir);
}
Deno.exit(code);
