/**
 * The messaging core's conformance suite: the seeds' ledger scenarios,
 * written once against the test sender and receivers (tests/core/_messaging.ts)
 * and run on every transport behind `Queue` (tests/core/_transport.ts), each
 * test named after its transport ("jetstream: lost acknowledgement ...").
 * A scenario asserts rows (outbox, queue.deliveries and queue.attempts,
 * inboxes, jobs, refusals); over JetStream it also reads the stream and its
 * consumers, to prove that the messages went through the broker.
 *
 * The JetStream registrations need a NATS server (tests/_nats.ts): without
 * one they are ignored, and the reason is printed.
 */
import { type TestDatabase, withTestDatabase } from "../_db.ts";
import {
  createSandbox,
  createTestServices,
  type LogLine,
  RECEIVERS,
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
import {
  type DeadLetterFilter,
  redrive as redriveDeadLetters,
} from "../../../lib/queue/dead_letters.ts";

/** One scenario on one transport, with a fresh database and sandbox. */
export interface LedgerCase {
  transport: TransportName;
  db: TestDatabase;
  sql: Sql;
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

/** A ledger scenario, run once per transport. */
export interface Scenario {
  name: string;
  run(t: LedgerCase): Promise<void>;
}

/** Registers every scenario on every transport. */
export function registerSuite(scenarios: readonly Scenario[]) {
  for (const transport of TRANSPORTS) {
    for (const scenario of scenarios) {
      const name = `${transport}: ${scenario.name}`;
      const fn = () => runCase(transport, scenario);
      if (transport === "jetstream") natsTest(name, fn);
      else Deno.test(name, fn);
    }
  }
}

async function runCase(transport: TransportName, scenario: Scenario) {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const stream = transport === "jetstream" ? testStream() : undefined;
    const broker = stream ? await openTestStream(stream, RECEIVERS) : undefined;
    try {
      await scenario.run({
        transport,
        db,
        sql,
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
  });
}
