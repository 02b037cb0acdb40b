/**
 * The carrier conformance suite (lib/carriers/conformance) on both
 * carriers, PostgreSQL and NATS JetStream, in both layouts: every test
 * service in one database (shared), and the sender and each receiver in a
 * database of its own (split). Each test is named after its layout and
 * carrier ("postgres: ...", "split jetstream: ..."). The suite is the
 * core's; what is this runner's is handed in: the run's databases, its
 * nats-server, and the loops. The JetStream half is ignored, with the
 * reason printed, where no NATS answers.
 */
import {
  conformanceCases,
  type Harness,
  SCENARIOS,
} from "../../lib/carriers/conformance/mod.ts";
import { startMessaging } from "../../lib/workers/mod.ts";
import { testDatabase } from "../_db.ts";
import { natsTest, TEST_NATS_URL, testStream } from "../_nats.ts";

const harness: Harness = {
  database: (options) => testDatabase(options),
  startLoops: startMessaging,
  jetStream: { url: TEST_NATS_URL, streamName: testStream },
};

for (const c of conformanceCases(harness, SCENARIOS)) {
  if (c.carrier === "jetstream") natsTest(c.name, c.run);
  else Deno.test(c.name, c.run);
}
