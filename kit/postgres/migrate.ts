/**
 * The app's migrations: numbered plain SQL files (`0001_name.sql`) in
 * `migrations/`, applied by lib/db/migrate.ts's runner and recorded in
 * `public.schema_migrations`; then the messaging core's own
 * (lib/schema.ts). `migrations/schema.sql` is the schema they make
 * (kit/postgres/schema_dump.ts).
 */
import type { Sql } from "../../lib/db/connect.ts";
import {
  applyMigrations,
  assertPrivileges,
  MigrationError,
  type MigrationFile,
  readMigrations,
} from "../../lib/db/migrate.ts";
import type { Logger } from "../../lib/log/mod.ts";
import {
  messagingMigrations,
  type MessagingPart,
  migrateMessaging,
} from "../../lib/schema.ts";

export {
  MigrationError,
  type MigrationFile,
  PrivilegeError,
  readMigrations,
} from "../../lib/db/migrate.ts";

/** The app's history, and one advisory lock key for all of it. */
export const HISTORY = {
  table: "public.schema_migrations",
  lockKey: 7_316_024_001,
};

/**
 * The app's file that completes the messaging core's first version: the
 * app's early files made the core's tables themselves, before lib/ had
 * migrations of its own.
 */
export const CORE_MADE_BY = "0019_retention_indexes.sql";

/** The core's version that the app's own files made. */
const CORE_BASELINE = 1;

/** The core's files that {@link migrate} applies after the app's own. */
export async function coreMigrationNames(): Promise<string[]> {
  return (await messagingMigrations())
    .filter((f) => f.version > CORE_BASELINE)
    .map((f) => f.name);
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
  // The app's own files made the messaging core's first version; the
  // core's later versions are its own to apply (lib/schema.ts), before the
  // app's later files, which use the core as it is now.
  const made = all.findIndex((f) => f.name === CORE_MADE_BY);
  if (made < 0) return await applyMigrations(sql, log, HISTORY, all);
  return [
    ...await applyMigrations(sql, log, HISTORY, all.slice(0, made + 1)),
    ...await migrateMessaging(sql, log, { baseline: CORE_BASELINE }),
    ...await applyMigrations(sql, log, HISTORY, all),
  ];
}

async function assertNotUnreleased(sql: Sql) {
  const found = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${HISTORY.lockKey})`;
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

/** Split mode's files: one folder per database (services/databases.ts). */
export const SPLIT_DIR = new URL("split/", MIGRATIONS_DIR);

/** What split mode needs to know of one database. */
export interface SplitDatabase {
  name: string;
  parts: readonly MessagingPart[];
  ownSchema: boolean;
  /**
   * Where it holds a queue: its slot, 1 to 8, which its delivery ids
   * start from and step by 8 (`split/queue/0002_delivery_ids.sql`).
   */
  queueSlot?: number;
}

/**
 * Brings one database of split mode up to date: the core's parts that it
 * holds, then the service's role and schema (`split/service.sql`), the
 * console's tables beside a queue (`split/queue/`) and the service's own
 * files (`split/<name>/`). The history is the app's, with each file named
 * `<folder>/<file>`. Returns the names applied by this call.
 */
export async function migrateServiceDatabase(
  sql: Sql,
  log: Logger,
  db: SplitDatabase,
): Promise<string[]> {
  await assertPrivileges(sql);
  const core = await migrateMessaging(sql, log, { parts: db.parts });
  const files: MigrationFile[] = [];
  if (db.ownSchema) {
    const template = await Deno.readTextFile(new URL("service.sql", SPLIT_DIR));
    files.push({
      name: `${db.name}/0000_service.sql`,
      sql: template.replaceAll("{{service}}", db.name),
    });
  }
  const folders = [...db.parts.includes("queue") ? ["queue"] : [], db.name];
  for (const folder of folders) {
    const found = await readMigrations(new URL(`${folder}/`, SPLIT_DIR));
    files.push(...found.map((f) => ({
      name: `${folder}/${f.name}`,
      sql: f.sql.replaceAll("{{queue_slot}}", String(db.queueSlot ?? 1)),
    })));
  }
  return [...core, ...await applyMigrations(sql, log, HISTORY, files)];
}
