/**
 * The JetStream side of the transport: one stream, named by the caller
 * (NATS_STREAM), holding one message per delivery on the subject
 * `<stream>.to.<subscriber>.<type>`, and one durable pull consumer per
 * subscriber filtered to its own subjects. Every name is made from the
 * stream's, so that several bakeries (or test runs) share one NATS server
 * without seeing each other's messages.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import type { Logger } from "../../log/mod.ts";

/** Nanoseconds in a millisecond: JetStream's durations are nanoseconds. */
const NS = 1_000_000;

/** The names the transport uses, all made from the stream's. */
export class StreamNames {
  constructor(readonly stream: string) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(stream)) {
      throw new RangeError(
        `a stream name must be 1 to 64 letters, digits, dashes or underscores (got ${
          JSON.stringify(stream)
        })`,
      );
    }
  }

  /** Where a delivery of `type` to `subscriber` is published. */
  subject(subscriber: string, type: string): string {
    return `${this.stream}.to.${subscriber}.${type}`;
  }

  /** What a subscriber's consumer takes: everything addressed to it. */
  filter(subscriber: string): string {
    return `${this.stream}.to.${subscriber}.>`;
  }

  /** The durable consumer of a subscriber. */
  consumer(subscriber: string): string {
    return subscriber;
  }

  /**
   * The broker's message id of a delivery: the envelope's message id and
   * the subscriber, so that the stream's duplicate window keeps one copy per
   * subscriber. A redrive adds its number: a fresh id that the window never
   * swallows, for the same envelope.
   */
  messageId(messageId: string, subscriber: string, redrive?: number): string {
    return redrive === undefined
      ? `${messageId}.${subscriber}`
      : `${messageId}.${subscriber}.redrive.${redrive}`;
  }
}

/** How the stream and its consumers are set up. */
export interface StreamSettings {
  names: StreamNames;
  subscribers: readonly string[];
  /**
   * The stream's duplicate window: a publish repeated within it (the relay
   * retrying after a lost PubAck, a relay taking over a dead one's rows) is
   * stored once. Past it, the receivers' inboxes make the repeat harmless.
   */
  duplicateWindowMs: number;
  /** How long a consumer waits for an acknowledgement before redelivering. */
  ackWaitMs: number;
  /** How long delivered messages stay in the stream, for people to look at. */
  maxAgeMs?: number;
}

/** An open connection to JetStream. */
export interface JetStream {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: StreamNames;
  /** True while the connection is up. */
  up(): boolean;
  close(): Promise<void>;
}

/**
 * Connects to NATS and makes sure the stream and one durable consumer per
 * subscriber exist with these settings (created, or updated in place). The
 * client reconnects by itself for as long as the process runs.
 */
export async function openJetStream(
  url: string,
  settings: StreamSettings,
  log: Logger,
): Promise<JetStream> {
  const nc = await connect({
    servers: url,
    name: `bakery-${settings.names.stream}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  let up = true;
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") {
        up = false;
        log.warn("broker_down", { server: s.server });
      } else if (s.type === "reconnect") {
        up = true;
        log.info("broker_up", { server: s.server });
      }
    }
  })();
  try {
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, settings);
    return {
      nc,
      js: jetstream(nc),
      jsm,
      names: settings.names,
      up: () => up && !nc.isClosed(),
      close: async () => {
        if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
      },
    };
  } catch (error) {
    await nc.close();
    throw error;
  }
}

async function ensureStream(jsm: JetStreamManager, settings: StreamSettings) {
  const { names } = settings;
  const stream = {
    name: names.stream,
    subjects: [`${names.stream}.to.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: settings.duplicateWindowMs * NS,
    max_age: (settings.maxAgeMs ?? 7 * 86_400_000) * NS,
  };
  try {
    await jsm.streams.info(names.stream);
    await jsm.streams.update(names.stream, stream);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await jsm.streams.add(stream);
  }
  for (const subscriber of settings.subscribers) {
    const consumer = {
      durable_name: names.consumer(subscriber),
      filter_subject: names.filter(subscriber),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: settings.ackWaitMs * NS,
      // Retries are the consumers' to count (attempts in PostgreSQL, a nak
      // with the retry's delay); JetStream redelivers without a limit.
      max_deliver: -1,
    };
    try {
      await jsm.consumers.info(names.stream, consumer.durable_name);
      await jsm.consumers.update(names.stream, consumer.durable_name, {
        ack_wait: consumer.ack_wait,
        max_deliver: consumer.max_deliver,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await jsm.consumers.add(names.stream, consumer);
    }
  }
}

function isNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamNotFound ||
      error.code === JetStreamApiCodes.ConsumerNotFound);
}
