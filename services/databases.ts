/**
 * Split mode's layout: which database each service gets, and what of the
 * messaging core it holds there. A sender holds its outbox and, over
 * PostgreSQL, a queue of its own, so that the relay's move stays one
 * transaction inside the sender's database; a receiver holds its inbox.
 * No database is shared by every delivery, and no transaction touches two.
 *
 * The default is still one database for every service
 * (SERVICE_DATABASES=shared).
 */
import {
  connect,
  type Sql,
  type TxSql,
  withDatabase,
} from "../lib/db/connect.ts";
import {
  asService,
  isRouted,
  poolOf,
  routeServices,
} from "../lib/db/service.ts";
import type { Logger } from "../lib/log/mod.ts";
import { LedgerRouter } from "../lib/ledger/mod.ts";
import type { MessagingPart } from "../lib/schema.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { migrateServiceDatabase } from "../kit/postgres/migrate.ts";
import { RECEIVERS, SENDERS } from "./routing.ts";
import { type Config, ConfigError } from "../config.ts";

/** One database of split mode. */
export interface ServiceDatabase {
  /** The service, and the end of its database's name. */
  name: string;
  /** The parts of the messaging core it holds (tenancy always). */
  parts: readonly MessagingPart[];
  /**
   * Whether the service has a schema and a role of its own. The console's
   * database has neither: it holds sign-in sessions and the wipes, in the
   * core's `platform` schema.
   */
  ownSchema: boolean;
  /** Where it holds a queue: the slot its delivery ids come from. */
  queueSlot?: number;
}

const sender = (name: string): ServiceDatabase => ({
  name,
  parts: ["outbox", "queue"],
  ownSchema: true,
});
const receiver = (name: string): ServiceDatabase => ({
  name,
  parts: ["inbox"],
  ownSchema: true,
});

const LAYOUT: readonly ServiceDatabase[] = [
  { name: "console", parts: [], ownSchema: false },
  // Orders sends, and receives PaymentSucceeded from billing.
  { ...sender("orders"), parts: ["outbox", "inbox", "queue"] },
  ...SENDERS.filter((s) => s !== "orders").map(sender),
  ...RECEIVERS.map(receiver),
  sender("lab_sender"),
  receiver("lab_receiver"),
  // The queue lab publishes its own jobs, to a queue beside the printer.
  { ...receiver("lab_printer"), parts: ["inbox", "queue"] },
];

/**
 * Refuses a `DATABASE_URL_<SERVICE>` that names no database of the layout
 * (a typo would otherwise leave that service in the shared cluster). The
 * programs pass it to `loadConfig`, so it refuses before anything opens.
 */
export function checkServiceUrls(config: Pick<Config, "DATABASE_URLS">) {
  const services = LAYOUT.map((d) => d.name);
  for (const service of Object.keys(config.DATABASE_URLS)) {
    if (services.includes(service)) continue;
    throw new ConfigError(
      `DATABASE_URL_${service.toUpperCase()} names no service: DATABASE_URL_ is followed by one of ${
        services.map((s) => s.toUpperCase()).join(", ")
      }`,
    );
  }
}

/** How many queues split mode's delivery ids can tell apart. */
export const QUEUE_SLOTS = 8;

/**
 * Every database of split mode, in the order they are made. Those with a
 * queue have a slot each, in this order: the bakery's senders first, as
 * SENDERS lists them.
 */
export const SPLIT_DATABASES: readonly ServiceDatabase[] = (() => {
  let slot = 0;
  return LAYOUT.map((db) =>
    db.parts.includes("queue") ? { ...db, queueSlot: ++slot } : db
  );
})();

/**
 * Which database's ledger holds a delivery, in split mode: ids step by
 * {@link QUEUE_SLOTS} from their queue's slot (lib/ledger/router.ts).
 */
export const LEDGERS = new LedgerRouter(
  new Map(
    SPLIT_DATABASES.filter((db) => db.queueSlot !== undefined)
      .map((db) => [db.queueSlot!, db.name]),
  ),
  QUEUE_SLOTS,
);

/** The service whose database holds delivery `id`'s queue, in split mode. */
export function queueOfDelivery(id: number): string | undefined {
  return LEDGERS.holderOf(id);
}

/**
 * Where each service's database is: the URL `moved` gives for it (from
 * `DATABASE_URL_<SERVICE>`: another server, say), or else the database
 * `<base>_<service>` on the server of `baseUrl`.
 */
export function serviceDatabaseUrls(
  baseUrl: string,
  moved: Readonly<Record<string, string>> = {},
): Map<string, string> {
  const base = databaseName(baseUrl) || "postgres";
  return new Map(SPLIT_DATABASES.map(({ name }) => [
    name,
    moved[name] ?? withDatabase(baseUrl, `${base}_${name}`),
  ]));
}

/** The name of the database a PostgreSQL URL names. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/** The database names of `urls` (serviceDatabaseUrls). */
export function databaseNames(urls: ReadonlyMap<string, string>): string[] {
  return [...urls.values()].map(databaseName);
}

/** Split mode's databases, open and migrated. */
export interface ServiceDatabases {
  /** Each database's URL, by service. */
  urls: ReadonlyMap<string, string>;
  /** Each database's pool, by service. */
  pools: ReadonlyMap<string, Sql>;
  /**
   * The console's pool, the app's own: its service transactions go to
   * each service's database ({@link routeServices}).
   */
  main: Sql;
  /** The services with an outbox, each waking its own relay. */
  senders: readonly string[];
  close(): Promise<void>;
}

/**
 * A sender's pool serves its commands, its relay and its consumers; a
 * receiver's only its transactions. 12 databases stay well under
 * PostgreSQL's 100 connections.
 */
const POOL_SIZE = { sender: 10, other: 4 };

/**
 * Opens split mode's databases: creates each one that is named after
 * `baseUrl` and missing (one that `moved` names must exist), brings its
 * schema up to date, and opens its pool. The console's pool then routes
 * each service's transactions to its own database.
 */
export async function openServiceDatabases(
  baseUrl: string,
  log: Logger,
  moved: Readonly<Record<string, string>> = {},
): Promise<ServiceDatabases> {
  checkServiceUrls({ DATABASE_URLS: moved });
  const urls = serviceDatabaseUrls(baseUrl, moved);
  const pools = new Map<string, Sql>();
  const close = async () => {
    await Promise.all([...pools.values()].map((p) => p.end({ timeout: 5 })));
  };
  try {
    for (const db of SPLIT_DATABASES) {
      const url = urls.get(db.name)!;
      if (moved[db.name] === undefined) {
        await ensureDatabase(baseUrl, databaseName(url));
      }
      const sql = connect(url, {
        max: db.parts.includes("queue") ? POOL_SIZE.sender : POOL_SIZE.other,
        applicationName: `bakery-${db.name}`,
      });
      pools.set(db.name, sql);
      await migrateServiceDatabase(sql, log, db);
    }
  } catch (error) {
    await close();
    throw error;
  }
  const main = pools.get("console")!;
  routeServices(main, (service) => pools.get(service));
  return {
    urls,
    pools,
    main,
    senders: SPLIT_DATABASES.filter((d) => d.parts.includes("outbox"))
      .map((d) => d.name),
    close,
  };
}

/** Reads in one service's database, as {@link readServices} gives it. */
export type ReadAt = <R>(
  service: string,
  read: (sql: TxSql) => Promise<R>,
) => Promise<R>;

/**
 * Reads across services as the read-only `console` role, in `tenantId`.
 * With one database, every read is in one snapshot, so that the parts
 * agree while workers move rows on. In split mode each read is a snapshot
 * of its service's database, taken in the order `fn` asks: no snapshot
 * spans two databases, so the caller reads a message's later steps after
 * its earlier ones.
 *
 * `queues` names, for `at`, a service in each database that holds one of
 * the bakery's queues: one with a shared database, each sender's in split
 * mode. What reads the queue reads it once per name, and adds up.
 * `together` says whether two services share a database, so that one
 * statement may join their tables.
 */
export async function readServices<T>(
  sql: Sql,
  tenantId: string,
  fn: (
    at: ReadAt,
    queues: readonly string[],
    together: (a: string, b: string) => boolean,
  ) => Promise<T>,
): Promise<T> {
  const scope = { tenantId };
  if (!isRouted(sql)) {
    return await asService(
      sql,
      "console",
      scope,
      (tx) => fn((_, read) => read(tx.sql), SENDERS.slice(0, 1), () => true),
      { snapshot: true },
    );
  }
  const together = (a: string, b: string) => poolOf(sql, a) === poolOf(sql, b);
  return await fn(
    (service, read) =>
      asService(
        poolOf(sql, service),
        "console",
        scope,
        (tx) => read(tx.sql),
        { snapshot: true },
      ),
    SENDERS,
    together,
  );
}

/**
 * The pools of the databases that hold the bakery's queues: `sql` itself
 * with one database, each sender's in split mode. For what lives beside a
 * queue and is set from the console (pauses, fault switches' copies).
 */
export function queuePools(sql: Sql): Sql[] {
  return [...new Set(SENDERS.map((s) => poolOf(sql, s)))];
}

/**
 * The pool of every database of the bakery: `sql` alone with one database,
 * each service's (the console's first) in split mode. For the platform's
 * own work that reaches every service, as the daily wipe does.
 */
export function servicePools(sql: Sql): Sql[] {
  return [...new Set(SPLIT_DATABASES.map((db) => poolOf(sql, db.name)))];
}

/**
 * `services` in groups that share a database, as `together` says: one
 * group with one database, one service each in split mode. A read can
 * then join a group's tables in one statement.
 */
export function sharingDatabases(
  services: readonly string[],
  together: (a: string, b: string) => boolean,
): string[][] {
  const groups: string[][] = [];
  for (const service of services) {
    const group = groups.find((g) => together(g[0], service));
    if (group) group.push(service);
    else groups.push([service]);
  }
  return groups;
}
