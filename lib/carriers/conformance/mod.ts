/**
 * The carrier conformance suite: the ledger scenarios that every carrier
 * passes, as River's riverdrivertest is for its drivers. They are written
 * once against small test services (services.ts) and run on every carrier
 * (carriers.ts) in both layouts of the databases (harness.ts).
 *
 * A scenario asserts rows (outbox, queue.deliveries and queue.attempts,
 * inboxes, jobs, refusals); over JetStream it also reads the stream and its
 * consumers (broker.ts), to prove that the messages went through the
 * broker.
 *
 * The runner supplies what only it knows through `Harness` (its databases,
 * its NATS server, the loops), and registers each of `conformanceCases`
 * with its test runner:
 *
 * ```ts
 * for (const c of conformanceCases(harness, SCENARIOS)) Deno.test(c.name, c.run);
 * ```
 */
import type { Scenario } from "./harness.ts";
import { concurrencyScenarios } from "./concurrency.ts";
import { deadLetterScenarios } from "./dead_letters.ts";
import { deliveryScenarios } from "./delivery.ts";
import { guardScenarios } from "./guard.ts";
import { leaseScenarios } from "./leases.ts";
import { receiverScenarios } from "./receivers.ts";
import { refusalScenarios } from "./refusals.ts";
import { wakeupScenarios } from "./wakeup.ts";

/** Every scenario, in the order the suite runs them. */
export const SCENARIOS: readonly Scenario[] = [
  ...deliveryScenarios,
  ...receiverScenarios,
  ...refusalScenarios,
  ...leaseScenarios,
  ...concurrencyScenarios,
  ...deadLetterScenarios,
  ...wakeupScenarios,
  ...guardScenarios,
];

export {
  type CaseDatabase,
  type Harness,
  type Layout,
  LAYOUTS,
  type LedgerCase,
  type Scenario,
} from "./harness.ts";
export { type ConformanceCase, conformanceCases } from "./cases.ts";
export {
  ACK_WAIT_MS,
  type CarrierName,
  CARRIERS,
  type JetStreamServer,
} from "./carriers.ts";
export type {
  CaseMessaging,
  LoopOptions,
  Loops,
  StartLoops,
  WorkersOptions,
} from "./workers.ts";
