/**
 * The two carriers the messaging tests run on, as the conformance suite
 * opens them (lib/carriers/conformance/carriers.ts), bound to this run's
 * nats-server (TEST_NATS_URL) and its stream names. The tests say
 * transport where the suite says carrier.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import type { JetStream } from "../../lib/carriers/jetstream/mod.ts";
import {
  JetStreamConsumer,
  type JetStreamConsumerOptions,
} from "../../lib/carriers/jetstream/consumer.ts";
import { FairShare } from "../../lib/delivery/fair_share.ts";
import {
  ACK_WAIT_MS,
  type CarrierName,
  type CarrierOptions,
  CARRIERS,
  type JetStreamServer,
  type OpenCarrier,
  openCarrier,
  openStream,
} from "../../lib/carriers/conformance/carriers.ts";
import { SUBSCRIBERS } from "../../lib/carriers/conformance/services.ts";
import { TEST_NATS_URL, testStream } from "../_nats.ts";

export {
  type ConsumerState,
  type StoredMessage,
  StreamView,
} from "../../lib/carriers/conformance/broker.ts";

export type TransportName = CarrierName;

/** Every transport behind `Queue`, in the order the suite runs them. */
export const TRANSPORTS: readonly TransportName[] = CARRIERS;

/** The test workers' AckWait (see ACK_WAIT_MS). */
export const TEST_ACK_WAIT_MS = ACK_WAIT_MS;

/** This run's nats-server, and a stream name of a test's own. */
export const TEST_JETSTREAM: JetStreamServer = {
  url: TEST_NATS_URL,
  streamName: testStream,
};

export type TestTransportOptions = Omit<CarrierOptions, "jetStream">;

/** One transport, open. */
export type TestTransport = OpenCarrier;

/** Opens `name`, storing the deliveries' rows through `sql`. */
export async function openTestTransport(
  name: TransportName,
  sql: Sql,
  options: TestTransportOptions,
): Promise<TestTransport> {
  return await openCarrier(name, sql, {
    ...options,
    jetStream: TEST_JETSTREAM,
  });
}

/**
 * Opens (creating it if need be) a test stream on this run's nats-server;
 * its lanes' consumers are made as messages come.
 */
export async function openTestStream(
  name: string,
  subscribers: readonly string[],
  ackWaitMs = TEST_ACK_WAIT_MS,
): Promise<JetStream> {
  return await openStream(TEST_NATS_URL, name, subscribers, ackWaitMs);
}

/**
 * One JetStream consumer of `t_recv_a`, driven by hand (notify, tick,
 * fetched), with a share of its own as a process of its own has.
 */
export function testJetStreamConsumer(
  options:
    & Pick<
      JetStreamConsumerOptions,
      "sql" | "owner" | "stream" | "dispatcher" | "ackWaitMs"
    >
    & Partial<JetStreamConsumerOptions>,
): JetStreamConsumer {
  return new JetStreamConsumer({
    subscriber: "t_recv_a",
    share: new FairShare({
      perTenant: 10,
      perLane: 10,
      maxDetached: 10,
      stragglerMs: 250,
    }),
    subscribers: SUBSCRIBERS,
    retryDelaysMs: [100],
    timeoutMs: 5_000,
    log: memoryLogger("error").logger,
    ...options,
  });
}
