/**
 * The ledger scenarios of the messaging core on both transports, PostgreSQL
 * and NATS JetStream, in both layouts: every test service in one database
 * (shared), and the sender and each receiver in a database of its own
 * (split). One suite (tests/core/_conformance/), each test named after its
 * layout and transport ("postgres: ...", "split jetstream: ..."). The
 * JetStream half is ignored, with the reason printed, where no NATS answers.
 */
import { registerSuite } from "./_conformance/mod.ts";
import { concurrencyScenarios } from "./_conformance/concurrency.ts";
import { deadLetterScenarios } from "./_conformance/dead_letters.ts";
import { deliveryScenarios } from "./_conformance/delivery.ts";
import { guardScenarios } from "./_conformance/guard.ts";
import { leaseScenarios } from "./_conformance/leases.ts";
import { receiverScenarios } from "./_conformance/receivers.ts";
import { refusalScenarios } from "./_conformance/refusals.ts";
import { wakeupScenarios } from "./_conformance/wakeup.ts";

registerSuite([
  ...deliveryScenarios,
  ...receiverScenarios,
  ...refusalScenarios,
  ...leaseScenarios,
  ...concurrencyScenarios,
  ...deadLetterScenarios,
  ...wakeupScenarios,
  ...guardScenarios,
]);
