/**
 * The messaging core's own schema. Each part ships its versioned migrations
 * beside its code. Within each version, the parts go in this order:
 *
 * - tenancy (lib/db/migrations), which every database of the core needs:
 *   the `platform` schema, the roles `relay`, `queue` and `console`, the
 *   tenant policy every table carries, the tenants' registry with its wipe
 *   gate, fault switches, the refusals of closed tenants, and the trigger
 *   that keeps a stored envelope as it was;
 * - outbox (lib/outbox/migrations): `platform.create_outbox_with_indexes`,
 *   which gives a sender's schema its outbox;
 * - inbox (lib/inbox/migrations): `platform.create_inbox`, which gives a
 *   receiver's schema its inbox;
 * - queue (lib/ledger/migrations): the PostgreSQL queue, schema `queue`.
 *
 * The outbox, the inbox and the queue need tenancy alone, so a database
 * can hold any of them: a sender's its outbox, a receiver's its inbox. The
 * history is `public.messaging_migrations`, one row per file, named
 * `<part>/<file>`. An application's own migrations make its services'
 * roles and schemas, then call the two functions for each.
 */
import type { Sql } from "./db/connect.ts";
import {
  applyMigrations,
  assertPrivileges,
  type MigrationFile,
  readMigrations,
  recordMigrations,
} from "./db/migrate.ts";
import type { Logger } from "./log/mod.ts";
import { schemaNames } from "./db/names.ts";

/** The core's parts, in the order they are applied. */
export const MESSAGING_PARTS = ["tenancy", "outbox", "inbox", "queue"] as const;
export type MessagingPart = typeof MESSAGING_PARTS[number];

const FOLDERS: Record<MessagingPart, URL> = {
  tenancy: new URL("./db/migrations/", import.meta.url),
  outbox: new URL("./outbox/migrations/", import.meta.url),
  inbox: new URL("./inbox/migrations/", import.meta.url),
  queue: new URL("./ledger/migrations/", import.meta.url),
};

/** Where the core's history is kept, and the lock its migrations take. */
export const MESSAGING_HISTORY = {
  table: "public.messaging_migrations",
  lockKey: 7_316_024_002,
};

export interface MigrateMessagingOptions {
  /**
   * The parts this database holds (default: all of them). Tenancy is
   * always among them.
   */
  parts?: readonly MessagingPart[];
  /**
   * Every part's files up to this version are there already, made another
   * way (an application whose own migrations made them before the core had
   * its own): recorded as applied, not run.
   */
  baseline?: number;
}

/**
 * The core's migration files, named `<part>/<file>`, in the order applied:
 * by version, and within one version by part.
 * The files write the core's schemas as `{{platform}}` and `{{queue}}`;
 * each is read with the names in use (lib/db/names.ts), so that under the
 * default names the text, and so its checksum, is the file as it was
 * before the names could be chosen.
 */
export async function messagingMigrations(
  parts: readonly MessagingPart[] = MESSAGING_PARTS,
): Promise<(MigrationFile & { version: number })[]> {
  const all = [];
  for (const [order, part] of MESSAGING_PARTS.entries()) {
    if (part !== "tenancy" && !parts.includes(part)) continue;
    for (const file of await readMigrations(FOLDERS[part])) {
      all.push({
        order,
        version: Number(file.name.slice(0, 4)),
        name: `${part}/${file.name}`,
        sql: withSchemaNames(file.sql),
      });
    }
  }
  // Version by version, each in the parts' order: a part's first version
  // calls tenancy's functions under their first names, which tenancy's
  // second version changes.
  return all
    .sort((a, b) => a.version - b.version || a.order - b.order)
    .map(({ order: _, ...file }) => file);
}

function withSchemaNames(sql: string): string {
  const names = schemaNames();
  return sql.replaceAll("{{platform}}", names.platform)
    .replaceAll("{{queue}}", names.queue);
}

/**
 * Brings the core's schema up to date in the database of `sql`, whose user
 * must be able to create roles and schemas. Returns the files applied by
 * this call.
 */
export async function migrateMessaging(
  sql: Sql,
  log: Logger,
  options: MigrateMessagingOptions = {},
): Promise<string[]> {
  await assertPrivileges(sql);
  const files = await messagingMigrations(options.parts);
  const baseline = options.baseline ?? 0;
  if (baseline > 0) {
    const made = files.filter((f) => f.version <= baseline);
    await recordMigrations(sql, MESSAGING_HISTORY, made);
  }
  return await applyMigrations(sql, log, MESSAGING_HISTORY, files);
}
