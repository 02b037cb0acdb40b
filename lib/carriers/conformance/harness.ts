/**
 * What a runner hands the suite (`Harness`), and what each scenario is
 * given (`LedgerCase`).
 */
import type { Sql } from "../../db/connect.ts";
import type { DeadLetterFilter } from "../../ledger/dead_letters.ts";
import type { CarrierName } from "./carriers.ts";
import type { StreamView } from "./broker.ts";
import type {
  CaseMessaging,
  LogLine,
  WorkersHarness,
  WorkersOptions,
} from "./workers.ts";

/**
 * Where the test services' tables are:
 *
 * - shared: every test service in one database;
 * - split: the sender (its outbox, and the queue) in one database, and each
 *   receiver (its inbox and its jobs) in one of its own, so that no
 *   transaction touches two databases. Each database holds its own
 *   services' tables alone: a read of a receiver's table that does not go
 *   to its database fails instead of finding nothing.
 */
export type Layout = "shared" | "split";

/** Every layout, in the order the suite runs them. */
export const LAYOUTS: readonly Layout[] = ["shared", "split"];

/** A database of one case, made for it. */
export interface CaseDatabase {
  url: string;
  sql: Sql;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * What the runner supplies, since only it knows its machine: where its
 * PostgreSQL makes databases, where its NATS server is, and the loops that
 * drive the carrier (startMessaging, from lib/workers).
 */
export interface Harness extends WorkersHarness {
  /**
   * A fresh database that holds the core's schema (migrateMessaging) and
   * nothing else; `max` is its pool's size (default the runner's own).
   */
  database(options?: { max?: number }): Promise<CaseDatabase>;
}

/**
 * One scenario on one carrier in one layout, with fresh databases and a
 * tenant.
 */
export interface LedgerCase {
  carrier: CarrierName;
  layout: Layout;
  /** The sender's database: its outbox and the queue. */
  db: CaseDatabase;
  /** The sender database's pool; it routes each receiver to its own. */
  sql: Sql;
  /** The pool of `service`'s database (poolOf), for reads of its tables. */
  at(service: string): Sql;
  /**
   * Routes `pool` (another pool on the sender's database, as a second
   * process has) the way `sql` is routed.
   */
  route(pool: Sql): void;
  /** A tenant of the case's own (the test services exist already). */
  tenantId: string;
  /** The runner's machinery, for a scenario that starts workers itself. */
  harness: Harness;
  /** JetStream: the case's stream, dropped after the case. */
  stream?: string;
  /** JetStream: that stream and its consumers, as the broker holds them. */
  view?: StreamView;
  /** Runs `fn` with test workers on this carrier (and this stream). */
  workers(
    options: WorkersOptions,
    fn: (w: { messaging: CaseMessaging; lines: LogLine[] }) => Promise<void>,
  ): Promise<void>;
  /** Redrives dead letters as an operator does on this carrier. */
  redrive(
    tenantId: string,
    filter: DeadLetterFilter,
    actor: string,
  ): Promise<number[]>;
}

/** A ledger scenario, run once per carrier and layout. */
export interface Scenario {
  name: string;
  run(t: LedgerCase): Promise<void>;
}
