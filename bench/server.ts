/**
 * The PostgreSQL the benchmark runs on: its own embedded cluster in a
 * temporary directory with the durable defaults (fsync and synchronous_commit
 * on), or the server of BENCH_DATABASE_URL. One template database is migrated
 * once; every scenario gets a fresh database cloned from it and dropped after.
 */
import { connect, type Sql, withDatabase } from "../lib/db/connect.ts";
import {
  type EmbeddedCluster,
  startEmbedded,
} from "../kit/postgres/embedded.ts";
import { removeDataDir } from "../kit/postgres/embedded_layout.ts";
import { migrate } from "../kit/postgres/migrate.ts";
import { createLogger } from "../lib/log/mod.ts";
import { parentPid } from "./procfs.ts";

export interface BenchDb {
  name: string;
  url: string;
  /** A pool for the scenario's own queries (seeding, counting). */
  sql: Sql;
  drop(): Promise<void>;
}

export interface BenchServer {
  adminUrl: string;
  embedded: boolean;
  /** The postmaster's pid when the server runs on this machine. */
  postmasterPid: number | null;
  /** pg_stat_statements is loaded (embedded cluster with --stats). */
  stats: boolean;
  /** Settings that decide what the figures mean. */
  settings: Record<string, string>;
  /** A fresh migrated database for one scenario. */
  database(label: string): Promise<BenchDb>;
  /** Drops every database it made, stops the cluster, removes its files. */
  stop(): Promise<void>;
}

const log = createLogger("warn", (line) => console.error(line));

/** Settings recorded with the results. */
const SHOWN = [
  "server_version",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_level",
  "shared_buffers",
  "max_connections",
  "max_wal_size",
  "checkpoint_timeout",
];

export async function startServer(
  options: { stats: boolean },
): Promise<BenchServer> {
  const external = Deno.env.get("BENCH_DATABASE_URL");
  let cluster: EmbeddedCluster | undefined;
  let dataDir: string | undefined;
  if (!external) {
    dataDir = await Deno.makeTempDir({ prefix: "bakery-bench-" });
    cluster = await startEmbedded({
      dataDir,
      log,
      // Durable defaults stay as they are; only room for the pools of the
      // worker processes, and statement statistics when asked for.
      postgresFlags: [
        "-c",
        "max_connections=200",
        ...(options.stats
          ? ["-c", "shared_preload_libraries=pg_stat_statements"]
          : []),
      ],
    });
  }
  const adminUrl = external ?? cluster!.url;
  const stats = options.stats && !external;
  const made = new Set<string>();
  const template = `bench_tpl_${Deno.pid}`;
  let counter = 0;
  const admin = connect(adminUrl, { max: 1, applicationName: "bench-admin" });
  const stopAll = async () => {
    for (const name of made) {
      await admin`drop database if exists ${admin(name)} with (force)`
        .catch(() => {});
    }
    await admin.end({ timeout: 5 }).catch(() => {});
    await cluster?.stop();
    if (dataDir) await removeDataDir(dataDir);
  };
  try {
    const rows = await admin<{ name: string; setting: string }[]>`
      select name, current_setting(name) as setting from pg_settings
       where name = any(${SHOWN})`;
    const settings = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
    const [{ pid }] = await admin<
      { pid: number }[]
    >`select pg_backend_pid() as pid`;
    const postmasterPid = parentPid(pid);
    if (stats) await admin`create extension if not exists pg_stat_statements`;
    await admin`create database ${admin(template)}`;
    made.add(template);
    const tpl = connect(withDatabase(adminUrl, template), { max: 1 });
    try {
      await migrate(tpl, log);
    } finally {
      await tpl.end();
    }
    return {
      adminUrl,
      embedded: !external,
      postmasterPid,
      stats,
      settings,
      database: async (label) => {
        const name = `bench_${Deno.pid}_${++counter}_${label}`;
        await admin`create database ${admin(name)} template ${admin(template)}`;
        made.add(name);
        const url = withDatabase(adminUrl, name);
        const sql = connect(url, { max: 4, applicationName: "bench" });
        return {
          name,
          url,
          sql,
          drop: async () => {
            await sql.end({ timeout: 5 });
            await admin`drop database if exists ${admin(name)} with (force)`;
            made.delete(name);
          },
        };
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * The top statements of the server by total time since the last reset (all
 * databases: a scenario's own database is dropped by the time this runs).
 */
export async function topStatements(
  sql: Sql,
  limit = 25,
): Promise<Record<string, unknown>[]> {
  const rows = await sql<
    {
      query: string;
      calls: number;
      total_ms: number;
      mean_ms: number;
      rows: number;
    }[]
  >`
    select left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 240) as query,
           calls::int as calls, round(total_exec_time::numeric, 1)::float8 as total_ms,
           round(mean_exec_time::numeric, 3)::float8 as mean_ms, rows::int as rows
      from pg_stat_statements
     order by total_exec_time desc limit ${limit}`;
  return rows.map((r) => ({ ...r }));
}

export async function resetStatements(sql: Sql) {
  await sql`select pg_stat_statements_reset()`;
}
