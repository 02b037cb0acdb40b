/**
 * Forward-only migrations: named plain SQL files, applied in order, each in
 * its own transaction, recorded with a checksum in a history table. Every
 * transaction first takes one advisory lock, so processes that start
 * together apply each file exactly once. The core's own migrations
 * (lib/schema.ts) and an application's run through the same runner, each
 * with its own history and lock.
 */
import type { Sql, TxSql } from "./connect.ts";
import { sha256Hex } from "../hash.ts";
import type { Logger } from "../log/mod.ts";

/** A migration file failed; the database is as it was before that file. */
export class MigrationError extends Error {
  override name = "MigrationError";
}

/** The database user may not create the roles and schemas migrations make. */
export class PrivilegeError extends Error {
  override name = "PrivilegeError";
}

export interface MigrationFile {
  name: string;
  sql: string;
}

/** Where a set of migrations keeps its history, and the lock it takes. */
export interface MigrationHistory {
  /** A table name, schema-qualified: made on first use. */
  table: string;
  /** The advisory lock key every transaction of this set takes first. */
  lockKey: number;
}

/** Reads `NNNN_name.sql` files from a folder, in order. */
export async function readMigrations(
  dir: URL | string,
): Promise<MigrationFile[]> {
  const files: MigrationFile[] = [];
  const base = dir instanceof URL ? dir : new URL(`file://${dir}/`);
  for await (const entry of Deno.readDir(base)) {
    if (entry.isFile && /^\d{4}_[a-z0-9_]+\.sql$/.test(entry.name)) {
      files.push({
        name: entry.name,
        sql: await Deno.readTextFile(new URL(entry.name, base)),
      });
    }
  }
  return files.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Applies the files not yet in `history`, in order. Returns the names
 * applied by this call (empty when the database was up to date). A file
 * recorded with another checksum is logged, not applied again.
 */
export async function applyMigrations(
  sql: Sql,
  log: Logger,
  history: MigrationHistory,
  files: readonly MigrationFile[],
): Promise<string[]> {
  const table = sql(history.table);
  const applied: string[] = [];
  for (const file of files) {
    const checksum = await sha256Hex(file.sql);
    const done = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${history.lockKey})`;
      await ensureHistory(tx, history);
      const [row] = await tx<{ checksum: string }[]>`
        select checksum from ${table} where name = ${file.name}`;
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
      await tx`insert into ${table} (name, checksum)
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

/**
 * Records `files` as applied without running them: for a database whose
 * objects were made another way (an application's own earlier history).
 * Files recorded already are left as they are. Returns the names recorded.
 */
export async function recordMigrations(
  sql: Sql,
  history: MigrationHistory,
  files: readonly MigrationFile[],
): Promise<string[]> {
  const table = sql(history.table);
  return await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${history.lockKey})`;
    await ensureHistory(tx, history);
    const recorded: string[] = [];
    for (const file of files) {
      const rows = await tx`
        insert into ${table} (name, checksum)
        values (${file.name}, ${await sha256Hex(file.sql)})
        on conflict (name) do nothing returning name`;
      if (rows.length > 0) recorded.push(file.name);
    }
    return recorded;
  });
}

/** The names recorded in `history`; none when its table does not exist. */
export async function appliedMigrations(
  sql: Sql,
  history: MigrationHistory,
): Promise<string[]> {
  const [found] = await sql<{ t: string | null }[]>`
    select to_regclass(${history.table})::text as t`;
  if (!found.t) return [];
  const rows = await sql<{ name: string }[]>`
    select name from ${sql(history.table)} order by name`;
  return rows.map((r) => r.name);
}

async function ensureHistory(tx: TxSql, history: MigrationHistory) {
  await tx`create table if not exists ${tx(history.table)} (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`;
}

/**
 * Refuses, with one clear line, a user who may not create roles and
 * schemas: migrations make both.
 */
export async function assertPrivileges(sql: Sql) {
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
      `database user ${me.name} must be a superuser, or have CREATEROLE and CREATE on the database, to create the roles and schemas the migrations make`,
    );
  }
}
