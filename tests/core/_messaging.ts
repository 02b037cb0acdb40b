/**
 * A small test sender and three test receivers, not the bakery, for testing
 * lib/outbox, lib/relay, lib/ledger, lib/carriers, lib/delivery and
 * lib/inbox: the conformance suite's own (lib/carriers/conformance), with
 * its workers started by lib/workers on this run's nats-server.
 *
 * - t_sender.orders: the sender's own state; placing an order appends
 *   OrderPlaced to t_sender.outbox in the same transaction.
 * - t_recv_{a,b,c}.jobs: one job per order (unique), the receiver's effect.
 *
 * The test workers run on either transport (tests/core/_transport.ts): the
 * PostgreSQL queue by default, or NATS JetStream with `transport:
 * "jetstream"`.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import { type Moved, PgMove, type Shortcut } from "../../lib/carriers/mod.ts";
import {
  type Messaging,
  type MessagingOptions,
  startMessaging,
} from "../../lib/workers/mod.ts";
import {
  type CaseMessaging,
  type LogLine,
  startWorkers,
  withWorkers as withCaseWorkers,
  type WorkersHarness,
  type WorkersOptions,
} from "../../lib/carriers/conformance/workers.ts";
import { ROUTING } from "../../lib/carriers/conformance/services.ts";
import { TEST_JETSTREAM } from "./_transport.ts";

export {
  type Answer,
  createService,
  createTenant as createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  ORIGIN,
  placeOrder,
  placeOrders,
  type Receiver,
  receiverApply,
  receiverFault,
  RECEIVERS,
  ROUTING,
  SENDER,
  SUBSCRIBERS,
  testDispatcher,
  type TestDispatcherOptions,
} from "../../lib/carriers/conformance/services.ts";
export {
  claimDeliveries,
  count,
  waitFor,
  waitForDeliveries,
  waitForJobs,
} from "../../lib/carriers/conformance/rows.ts";
export type { LogLine };

/** What the test workers take besides startMessaging's own options. */
export type TestWorkersOptions = WorkersOptions<MessagingOptions>;

/** The test workers: the messaging, and the transport it runs on. */
export type TestMessaging = CaseMessaging<Messaging>;

/** The core's loops, on this run's nats-server. */
const HARNESS: WorkersHarness<MessagingOptions, Messaging> = {
  startLoops: startMessaging,
  jetStream: TEST_JETSTREAM,
};

/**
 * Starts relays and consumers for the test services, on `transport`. Over
 * JetStream the workers connect to the stream (with one durable consumer
 * per test receiver) and run the broker's consumers in place of the
 * PostgreSQL queue's; stop() also closes that connection.
 */
export function startTestWorkers(
  db: { url: string; sql: Sql },
  options: TestWorkersOptions = {},
): { messaging: Promise<TestMessaging>; lines: LogLine[] } {
  return startWorkers(HARNESS, db, options);
}

/**
 * Starts workers, runs `fn`, and always stops them, so that a failing
 * assertion never leaves a loop or a listener running.
 */
export async function withWorkers(
  db: { url: string; sql: Sql },
  options: TestWorkersOptions,
  fn: (
    workers: { messaging: TestMessaging; lines: LogLine[] },
  ) => Promise<void>,
) {
  await withCaseWorkers(HARNESS, db, options, fn);
}

/**
 * The relay's move into the test queue (a Ledger), keeping every move it
 * makes in `moves`.
 */
export function recordingShortcut(
  sql: Sql,
): { shortcut: Shortcut; moves: Moved[] } {
  const inner = new PgMove(new Ledger(sql, ROUTING));
  const moves: Moved[] = [];
  const shortcut: Shortcut = {
    move: async (service, limit, options) => {
      const moved = await inner.move(service, limit, options);
      moves.push(moved);
      return moved;
    },
  };
  return { shortcut, moves };
}
