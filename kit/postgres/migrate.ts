/**
 * Forward-only migrations: numbered plain SQL files (`0001_name.sql`), applied
 * in order, each in its own transaction, recorded with a checksum in
 * `public.schema_migrations`. Every transaction first takes one advisory lock,
 * so processes that start together apply each file exactly once.
 * `migrations/schema.sql` is the schema they make (kit/postgres/schema_dump.ts).
 */
import type { Sql } from "../../lib/db/connect.ts";
import { sha256Hex } from "../../lib/hash.ts";
import type { Logger } from "../../lib/log/mod.ts";

/** One advisory lock key for the whole migration history ("bakery migrations"). */
const LOCK_KEY = 7_316_024_001;

/** A migration file failed; the database is as it was before that file. */
export class MigrationError extends Error {
  override name = "MigrationError";
}

/** The database user may not create the roles and schemas the program needs. */
export class PrivilegeError extends Error {
  override name = "PrivilegeError";
}

/**
 * The database was migrated by the files of a schema that was never
 * released; the files of today's schema cannot be applied on top of it.
 */
export class UnreleasedSchemaError extends MigrationError {
  override name = "UnreleasedSchemaError";
}

/**
 * The migrations before they were folded into one file per area, before
 * the first release. No released database has them; one that does was made
 * by a development version, and applying today's files to it would fail
 * midway (its tables exist already).
 */
export const UNRELEASED: readonly string[] = [
  "0001_roles_schemas_sandboxes.sql",
  "0002_messaging.sql",
  "0003_bakery.sql",
  "0004_sessions.sql",
  "0005_wipes.sql",
  "0006_pending_indexes.sql",
  "0007_closure_audit.sql",
  "0008_relay_role.sql",
  "0010_unread_order_index.sql",
  "0011_fewer_pending_indexes.sql",
  "0012_timeline_lookups.sql",
  "0013_retry_index.sql",
  "0014_deliveries_listed_by_message.sql",
  "0015_sandbox_policy_once_per_statement.sql",
  "0016_refuse.sql",
  "0017_payment_checks.sql",
  "0018_fair_claims.sql",
  "0019_broker_redrives.sql",
];

export interface MigrationFile {
  name: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files from a folder, in order. */
export async function readMigrations(
  dir: URL | string,
): Promise<MigrationFile[]> {
  const files: MigrationFile[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && /^\d{4}_[a-z0-9_]+\.sql$/.test(entry.name)) {
      const base = dir instanceof URL ? dir : new URL(`file://${dir}/`);
      files.push({
        name: entry.name,
        sql: await Deno.readTextFile(new URL(entry.name, base)),
      });
    }
  }
  return files.sort((a, b) => a.name.localeCompare(b.name));
}

/** The migrations folder of this project. */
export const MIGRATIONS_DIR = new URL("../../migrations/", import.meta.url);

/**
 * Applies what is not yet applied. Returns the names applied by this call
 * (empty when the database was up to date). Refuses, before applying
 * anything, a database migrated by the unreleased earlier schema
 * ({@link UnreleasedSchemaError}).
 */
export async function migrate(
  sql: Sql,
  log: Logger,
  files?: MigrationFile[],
): Promise<string[]> {
  await assertPrivileges(sql);
  await assertNotUnreleased(sql);
  const all = files ?? await readMigrations(MIGRATIONS_DIR);
  const applied: string[] = [];
  for (const file of all) {
    const checksum = await sha256Hex(file.sql);
    const done = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
      await tx`create table if not exists public.schema_migrations (
        name text primary key,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
      const [row] = await tx<{ checksum: string }[]>`
        select checksum from public.schema_migrations where name = ${file.name}`;
      if (row) {
        if (row.checksum !== checksum) {
          log.warn("migration_changed", { file: file.name });
        }
        return false;
      }
      try {
        // A migration is a trusted file of many statements: the simple query
        // protocol runs it whole. No value from outside is ever part of it.
        await tx.unsafe(file.sql);
      } catch (error) {
        throw new MigrationError(
          `migration ${file.name} failed: ${(error as Error).message}`,
          { cause: error },
        );
      }
      await tx`insert into public.schema_migrations (name, checksum)
        values (${file.name}, ${checksum})`;
      return true;
    });
    if (done) {
      applied.push(file.name);
      log.info("migration_applied", { file: file.name });
    }
  }
  return applied;
}

async function assertNotUnreleased(sql: Sql) {
  const found = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    const [table] = await tx<{ t: string | null }[]>`
      select to_regclass('public.schema_migrations')::text as t`;
    if (!table.t) return [];
    const rows = await tx<{ name: string }[]>`
      select name from public.schema_migrations
       where name = any(${UNRELEASED}) order by name`;
    return rows.map((r) => r.name);
  });
  if (found.length) {
    const names = found.length > 2
      ? `${found[0]} ... ${found.at(-1)}, ${found.length} files`
      : found.join(", ");
    throw new UnreleasedSchemaError(
      `this database was migrated by an unreleased earlier schema (${names}); drop it, or delete DATA_DIR for the embedded one`,
    );
  }
}

async function assertPrivileges(sql: Sql) {
  const [me] = await sql<
    {
      name: string;
      rolsuper: boolean;
      rolcreaterole: boolean;
      cancreate: boolean;
    }[]
  >`
    select current_user as name, rolsuper, rolcreaterole,
           has_database_privilege(current_database(), 'CREATE') as cancreate
      from pg_roles where rolname = current_user`;
  if (!me.rolsuper && !(me.rolcreaterole && me.cancreate)) {
    throw new PrivilegeError(
      `database user ${me.name} must be a superuser, or have CREATEROLE and CREATE on the database, to create the service roles and schemas`,
    );
  }
}
