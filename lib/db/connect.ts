/**
 * Connections: one postgres.js pool per process, plus helpers that work on a
 * database URL (create a database from a template, drop it).
 */
import postgres from "postgres";

/** A postgres.js pool. */
export type Sql = postgres.Sql;
/** A postgres.js transaction handle. */
export type TxSql = postgres.TransactionSql;

/** A piece of SQL to embed in a statement of the caller's. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A connection taken from the pool until released (lib/db/service.ts). */
export type ReservedSql = postgres.ReservedSql;

export interface ConnectOptions {
  /** Pool size; 10 is postgres.js's default and ample for 2 cores. */
  max?: number;
  /** Name shown in pg_stat_activity, to tell the app's sessions apart. */
  applicationName?: string;
}

/** Opens a pool. Notices are not printed: the logger says what matters. */
export function connect(url: string, options: ConnectOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    idle_timeout: 30,
    connect_timeout: 10,
    connection: { application_name: options.applicationName ?? "outbox" },
  });
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** True when the database answers a trivial query. */
export async function ping(sql: Sql): Promise<boolean> {
  return await sql`select 1`.then(() => true, () => false);
}
