/**
 * The two transports the messaging tests run on, as the test sender and
 * receivers use them: the PostgreSQL queue (Ledger, and the relay's
 * one-transaction move into it), or NATS JetStream
 * (a JetStreamQueue over a Ledger ledger, on a stream of the test's own).
 * For JetStream, `view` reads the stream and its consumers as the broker
 * holds them, so that a test can prove the messages went through it.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { consumerLeaseMs } from "../../lib/delivery/mod.ts";
import { Ledger, type Queue, type Routing } from "../../lib/ledger/mod.ts";
import { type Carrier, postgresCarrier } from "../../lib/carriers/mod.ts";
import { type Envelope, tenantOf } from "../../lib/outbox/mod.ts";
import type { Shortcut } from "../../lib/carriers/mod.ts";
import type { RedriveOptions } from "../../lib/ledger/dead_letters.ts";
import {
  type JetStream,
  jetStreamCarrier,
  openJetStream,
  StreamNames,
} from "../../lib/carriers/jetstream/mod.ts";
import {
  JetStreamConsumer,
  type JetStreamConsumerOptions,
} from "../../lib/carriers/jetstream/consumer.ts";
import { FairShare } from "../../lib/delivery/fair_share.ts";
import { dropStream, TEST_NATS_URL, testStream } from "../_nats.ts";
import { SUBSCRIBERS } from "./_messaging.ts";

export type TransportName = "postgres" | "jetstream";

/** Every transport behind `Queue`, in the order the suite runs them. */
export const TRANSPORTS: readonly TransportName[] = ["postgres", "jetstream"];

/**
 * The test workers' AckWait: the consumers' lease for their 2 s timeout
 * (10 s), long enough that nothing is redelivered by AckWait unless a test
 * means it to be.
 */
export const TEST_ACK_WAIT_MS = consumerLeaseMs({ timeoutMs: 2000 });

/** A message as the stream stores it. */
export interface StoredMessage {
  seq: number;
  subject: string;
  /** The broker's message id (Nats-Msg-Id). */
  msgId: string;
  /** The envelope's message id. */
  messageId: string;
  /** The envelope's sandbox. */
  tenantId: string;
}

/** What a subscriber's lanes' consumers say of themselves, added up. */
export interface ConsumerState {
  /** Deliveries made, redeliveries included (its consumer sequence). */
  delivered: number;
  /** Delivered and not yet acknowledged. */
  ackPending: number;
  /** In the stream and not yet delivered. */
  pending: number;
}

/** Reads a stream and its consumers. */
export class StreamView {
  constructor(readonly stream: JetStream) {}

  get name(): string {
    return this.stream.names.stream;
  }

  /** How many messages the stream holds. */
  async count(): Promise<number> {
    return (await this.stream.jsm.streams.info(this.name)).state.messages;
  }

  /** Every message the stream holds, oldest first. */
  async stored(): Promise<StoredMessage[]> {
    const { state } = await this.stream.jsm.streams.info(this.name);
    const out: StoredMessage[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await this.stream.jsm.streams.getMessage(this.name, { seq });
      if (!m) continue;
      const envelope = m.json<Envelope>();
      out.push({
        seq: m.seq,
        subject: m.subject,
        msgId: m.header.get("Nats-Msg-Id"),
        messageId: envelope.messageId,
        tenantId: tenantOf(envelope),
      });
    }
    return out;
  }

  /** A subscriber's consumers, one per sandbox (lane), added up. */
  async consumer(subscriber: string): Promise<ConsumerState> {
    const state = { delivered: 0, ackPending: 0, pending: 0 };
    for (const lane of await this.stream.lanes.list()) {
      if (lane.subscriber !== subscriber) continue;
      state.delivered += lane.delivered;
      state.ackPending += lane.ackPending;
      state.pending += lane.pending;
    }
    return state;
  }
}

export interface TestTransportOptions {
  /** Who gets what. */
  routing: Routing;
  /** JetStream: the subscribers that get a durable consumer. */
  subscribers: readonly string[];
  /**
   * JetStream: the stream to use, which the caller drops; by default one
   * of the transport's own (testStream()), dropped by `close`.
   */
  stream?: string;
  /** JetStream: the consumers' AckWait (default TEST_ACK_WAIT_MS). */
  ackWaitMs?: number;
}

/** One transport, open. */
export interface TestTransport {
  name: TransportName;
  /** The transport, as startMessaging takes it. */
  transport: Carrier;
  /** What the relay publishes to. */
  queue: Queue;
  /** PostgreSQL: the relay's one-transaction move into `queue`. */
  shortcut?: Shortcut;
  /** JetStream: startMessaging's `broker`. */
  broker?: { stream: JetStream; ackWaitMs: number };
  /** JetStream: the stream, as the broker holds it. */
  view?: StreamView;
  /** How a redrive reaches this transport (the console's choice). */
  redrive: RedriveOptions;
  /** Closes the connection; drops the stream if it was the transport's own. */
  close(): Promise<void>;
}

/** Opens `name`, storing the deliveries' rows through `sql`. */
export async function openTestTransport(
  name: TransportName,
  sql: Sql,
  options: TestTransportOptions,
): Promise<TestTransport> {
  const { routing } = options;
  if (name === "postgres") {
    const transport = postgresCarrier({ sql, routing });
    return {
      name,
      transport,
      queue: transport.queue,
      shortcut: transport.shortcut,
      redrive: {},
      close: async () => {},
    };
  }
  const own = options.stream === undefined;
  const streamName = options.stream ?? testStream();
  const ackWaitMs = options.ackWaitMs ?? TEST_ACK_WAIT_MS;
  let stream: JetStream;
  try {
    stream = await openTestStream(streamName, options.subscribers, ackWaitMs);
  } catch (error) {
    if (own) await dropStream(streamName);
    throw error;
  }
  const transport = jetStreamCarrier({
    stream,
    ledger: new Ledger(sql, routing),
    routing,
    ackWaitMs,
  });
  return {
    name,
    transport,
    queue: transport.queue,
    broker: { stream, ackWaitMs },
    view: new StreamView(stream),
    redrive: { republish: true },
    close: async () => {
      await stream.close();
      if (own) await dropStream(streamName);
    },
  };
}

/**
 * Opens (creating it if need be) a test stream, as the bakery opens its own
 * (services/mod.ts); its lanes' consumers are made as messages come.
 */
export async function openTestStream(
  name: string,
  subscribers: readonly string[],
  ackWaitMs = TEST_ACK_WAIT_MS,
): Promise<JetStream> {
  return await openJetStream(TEST_NATS_URL, {
    names: new StreamNames(name),
    subscribers,
    // The bakery's minimum: well past any relay retry a test makes.
    duplicateWindowMs: 120_000,
    ackWaitMs,
  }, memoryLogger("error").logger);
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
