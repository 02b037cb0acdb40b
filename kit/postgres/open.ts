/**
 * Where the database comes from: `DATABASE_URL` when it is set, otherwise an
 * embedded cluster in the data directory with a database named `bakery`.
 */
import { connect, withDatabase } from "../../lib/db/connect.ts";
import { type EmbeddedCluster, startEmbedded } from "./embedded.ts";
import type { Logger } from "../../lib/log/mod.ts";

export interface OpenedDatabase {
  url: string;
  /** The embedded cluster this process started, if any; stop it last. */
  cluster?: EmbeddedCluster;
}

export async function openDatabase(options: {
  databaseUrl?: string;
  dataDir: string;
  log: Logger;
}): Promise<OpenedDatabase> {
  if (options.databaseUrl) return { url: options.databaseUrl };
  const cluster = await startEmbedded({
    dataDir: options.dataDir,
    log: options.log,
  });
  try {
    await ensureDatabase(cluster.url, "bakery");
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return { url: withDatabase(cluster.url, "bakery"), cluster };
}

/** Creates database `name` on the server of `adminUrl` unless it exists. */
export async function ensureDatabase(
  adminUrl: string,
  name: string,
  template?: string,
) {
  const admin = connect(adminUrl, { max: 1 });
  try {
    const [found] =
      await admin`select 1 from pg_database where datname = ${name}`;
    if (found) return;
    if (template) {
      await admin`create database ${admin(name)} template ${admin(template)}`;
    } else {
      await admin`create database ${admin(name)}`;
    }
  } finally {
    await admin.end();
  }
}

/**
 * Drops the databases `names` on the server of `adminUrl`, closing their
 * connections; one that is gone already is fine.
 */
export async function dropDatabases(adminUrl: string, names: string[]) {
  const admin = connect(adminUrl, { max: 1 });
  try {
    for (const name of names) {
      await admin`drop database if exists ${admin(name)} with (force)`;
    }
  } finally {
    await admin.end();
  }
}
