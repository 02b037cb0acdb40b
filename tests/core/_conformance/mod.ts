/**
 * The messaging core's conformance suite: the seeds' ledger scenarios,
 * written once against the test sender and receivers (tests/core/_messaging.ts)
 * and run on every transport behind `Queue` (tests/core/_transport.ts) in
 * both layouts of the databases, each test named after its layout and
 * transport ("jetstream: lost acknowledgement ...", "split jetstream: lost
 * acknowledgement ..."):
 *
 * - shared: every test service in one database;
 * - split: the sender (its outbox, and the queue) in one database, and each
 *   receiver (its inbox and its jobs) in one of its own, so that no
 *   transaction touches two databases. Each database holds its own
 *   services' tables alone: a read of a receiver's table that does not go
 *   to its database fails instead of finding nothing.
 *
 * A scenario asserts rows (outbox, queue.deliveries and queue.attempts,
 * inboxes, jobs, refusals); over JetStream it also reads the stream and its
 * consumers, to prove that the messages went through the broker.
 *
 * The JetStream registrations need a NATS server (tests/_nats.ts): without
 * one they are ignored, and the reason is printed.
 */
import { type TestDatabase, testDatabase, withTestDatabase } from "../_db.ts";
import {
  createSandbox,
  createTestServices,
  type LogLine,
  RECEIVERS,
  SENDER,
  type TestMessaging,
  type TestWorkersOptions,
  withWorkers,
} from "../_messaging.ts";
import { dropStream, natsTest, testStream } from "../../_nats.ts";
import {
  openTestStream,
  StreamView,
  type TransportName,
  TRANSPORTS,
} from "../_transport.ts";
import type { Sql } from "../../../lib/db/connect.ts";
import { poolOf, routeServices } from "../../../lib/db/service.ts";
import {
  type DeadLetterFilter,
  redrive as redriveDeadLetters,
} from "../../../lib/ledger/dead_letters.ts";

/** Where the test services' tables are (see the module's comment). */
export type Layout = "shared" | "split";

/** Every layout, in the order the suite runs them. */
export const LAYOUTS: readonly Layout[] = ["shared", "split"];

/**
 * One scenario on one transport in one layout, with fresh databases and a
 * sandbox.
 */
export interface LedgerCase {
  transport: TransportName;
  layout: Layout;
  /** The sender's database: its outbox and the queue. */
  db: TestDatabase;
  /** The sender database's pool; it routes each receiver to its own. */
  sql: Sql;
  /** The pool of `service`'s database (poolOf), for reads of its tables. */
  at(service: string): Sql;
  /**
   * Routes `pool` (another pool on the sender's database, as a second
   * process has) the way `sql` is routed.
   */
  route(pool: Sql): void;
  /** A sandbox of the test's own (the test services exist already). */
  tenantId: string;
  /** JetStream: the test's stream, dropped after the test. */
  stream?: string;
  /** JetStream: that stream and its consumers, as the broker holds them. */
  view?: StreamView;
  /** Runs `fn` with test workers on this transport (and this stream). */
  workers(
    options: TestWorkersOptions,
    fn: (w: { messaging: TestMessaging; lines: LogLine[] }) => Promise<void>,
  ): Promise<void>;
  /** Redrives dead letters as an operator does on this transport. */
  redrive(
    tenantId: string,
    filter: DeadLetterFilter,
    actor: string,
  ): Promise<number[]>;
}

/** A ledger scenario, run once per transport and layout. */
export interface Scenario {
  name: string;
  run(t: LedgerCase): Promise<void>;
}

/** Registers every scenario on every transport, in every layout. */
export function registerSuite(scenarios: readonly Scenario[]) {
  for (const layout of LAYOUTS) {
    for (const transport of TRANSPORTS) {
      for (const scenario of scenarios) {
        const prefix = layout === "shared" ? "" : `${layout} `;
        const name = `${prefix}${transport}: ${scenario.name}`;
        const fn = () => runCase(layout, transport, scenario);
        if (transport === "jetstream") natsTest(name, fn);
        else Deno.test(name, fn);
      }
    }
  }
}

/**
 * Runs `fn` with the receivers' pools of `layout` (none when shared), and
 * always drops their databases after.
 */
async function withReceiverDatabases(
  layout: Layout,
  fn: (pools: Map<string, Sql>) => Promise<void>,
) {
  const pools = new Map<string, Sql>();
  const made: TestDatabase[] = [];
  try {
    if (layout === "split") {
      // Made at once: each clone waits on the server, not on the others.
      const opened = await Promise.allSettled(RECEIVERS.map(async (r) => {
        const db = await testDatabase({ max: 4 });
        made.push(db);
        await createTestServices(db.sql, [r]);
        pools.set(r, db.sql);
      }));
      for (const o of opened) if (o.status === "rejected") throw o.reason;
    }
    await fn(pools);
  } finally {
    await Promise.allSettled(made.map((db) => db.drop()));
  }
}

async function runCase(
  layout: Layout,
  transport: TransportName,
  scenario: Scenario,
) {
  await withTestDatabase(async (db) => {
    await withReceiverDatabases(layout, async (receivers) => {
      await runIn(db, receivers, layout, transport, scenario);
    });
  });
}

async function runIn(
  db: TestDatabase,
  receivers: Map<string, Sql>,
  layout: Layout,
  transport: TransportName,
  scenario: Scenario,
) {
  const { sql } = db;
  const route = (pool: Sql) => {
    if (receivers.size > 0) routeServices(pool, (s) => receivers.get(s));
  };
  route(sql);
  await createTestServices(sql, layout === "split" ? [SENDER] : undefined);
  const tenantId = await createSandbox(sql);
  const stream = transport === "jetstream" ? testStream() : undefined;
  const broker = stream ? await openTestStream(stream, RECEIVERS) : undefined;
  try {
    await scenario.run({
      transport,
      layout,
      db,
      sql,
      at: (service) => poolOf(sql, service),
      route,
      tenantId,
      stream,
      view: broker && new StreamView(broker),
      workers: (options, fn) =>
        withWorkers(db, { transport, stream, ...options }, fn),
      redrive: (sandbox, filter, actor) =>
        redriveDeadLetters(sql, sandbox, filter, actor, {
          republish: transport === "jetstream",
        }),
    });
  } finally {
    await broker?.close();
    if (stream) await dropStream(stream);
  }
}
