/**
 * The JetStream side of the transport: one stream, named by the caller
 * (NATS_STREAM), holding one message per delivery on the subject
 * `<stream>.to.<subscriber>.<tenant>.<type>`, and one durable pull consumer
 * per lane (a subscriber and a tenant), filtered to that lane's subjects
 * and made when the lane first has a message (lanes.ts). Every name is made
 * from the stream's, so that several apps (or test runs) share one NATS
 * server without seeing each other's messages.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
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
import { Lanes } from "./lanes.ts";

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

  /** Where a delivery of `type` to `subscriber` in a tenant is published. */
  subject(subscriber: string, tenantId: string, type: string): string {
    return `${this.stream}.to.${subscriber}.${tenantId}.${type}`;
  }

  /** Everything addressed to a subscriber, in every tenant. */
  filter(subscriber: string): string {
    return `${this.stream}.to.${subscriber}.>`;
  }

  /** What a lane's consumer takes: a subscriber's messages of one tenant. */
  laneFilter(subscriber: string, tenantId: string): string {
    return `${this.stream}.to.${subscriber}.${tenantId}.*`;
  }

  /** Everything addressed to a tenant, for every subscriber. */
  tenantFilter(tenantId: string): string {
    return `${this.stream}.to.*.${tenantId}.*`;
  }

  /** The lane a consumer's filter is of, or null for another consumer. */
  laneOf(filter: string): { subscriber: string; tenantId: string } | null {
    const prefix = `${this.stream}.to.`;
    if (!filter.startsWith(prefix) || !filter.endsWith(".*")) return null;
    const tokens = filter.slice(prefix.length, -2).split(".");
    if (tokens.length !== 2) return null;
    return { subscriber: tokens[0], tenantId: tokens[1] };
  }

  /** The durable consumer of a lane. */
  consumer(subscriber: string, tenantId: string): string {
    return `${subscriber}-${tenantId}`;
  }

  /**
   * Where the relay and the republisher say that a subscriber's lanes have
   * new messages (core NATS, outside the stream): a hint for the consumers,
   * which look at the lanes themselves too (lanes.ts).
   */
  bell(subscriber: string): string {
    return `${this.stream}.bell.${subscriber}`;
  }

  /**
   * The broker's message id of a delivery: the envelope's message id and
   * the subscriber, so that the stream's duplicate window keeps one copy per
   * subscriber. A redrive adds its number: a fresh id that the window never
   * swallows, for the same envelope.
   */
  messageId(
    messageId: string,
    subscriber: string,
    redrive?: number,
    again = 0,
  ): string {
    const first = `${messageId}.${subscriber}`;
    if (redrive === undefined) return first;
    const redriven = `${first}.redrive.${redrive}`;
    // A copy sent again because the broker lost the last one.
    return again > 0 ? `${redriven}.again.${again}` : redriven;
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
  /**
   * Copies of the stream on the servers of a cluster (default 1). The
   * lanes' consumers set none of their own, so they follow the stream.
   */
  replicas?: number;
  /** How long delivered messages stay in the stream, for people to look at. */
  maxAgeMs?: number;
  /**
   * How long a lane's consumer stays without a fetch before the server
   * deletes it (default LANE_IDLE_MS).
   */
  laneIdleMs?: number;
}

/**
 * How long a lane's consumer may go unfetched: far past any retry delay and
 * past a restart of the workers, so that a lane with work is fetched again
 * long before; a lane idle for longer is made again on its next message.
 */
export const LANE_IDLE_MS = 3_600_000;

/** An open connection to JetStream. */
export interface JetStream {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: StreamNames;
  /** The lanes' consumers, made on demand. */
  lanes: Lanes;
  /** True while the connection is up. */
  up(): boolean;
  /** The cluster as this client sees it. */
  cluster(): BrokerCluster;
  close(): Promise<void>;
}

/** The NATS servers of a URL setting: one, or several comma-separated. */
export function natsServers(url: string): string[] {
  return url.split(",").map((u) => u.trim()).filter((u) => u !== "");
}

/** What a client knows of the NATS cluster it is connected to. */
export interface BrokerCluster {
  /** The server this client is connected to. */
  server: string;
  /** The cluster's name; null for a server on its own. */
  name: string | null;
  /** The cluster's other servers, as the connected one announces them. */
  servers: string[];
  /** The stream's copies (NATS_REPLICAS). */
  replicas: number;
}

/**
 * Connects to NATS and makes sure the stream exists with these settings
 * (created, or updated in place); the lanes' consumers are made as messages
 * come. The client reconnects by itself for as long as the process runs.
 */
export async function openJetStream(
  url: string,
  settings: StreamSettings,
  log: Logger,
): Promise<JetStream> {
  const nc = await connect({
    servers: natsServers(url),
    name: `outbox-${settings.names.stream}`,
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
    await ensureStream(jsm, settings, log);
    return {
      nc,
      js: jetstream(nc),
      jsm,
      names: settings.names,
      lanes: new Lanes(nc, jsm, settings.names, {
        ackWaitMs: settings.ackWaitMs,
        idleMs: settings.laneIdleMs ?? LANE_IDLE_MS,
        makeStream: async () => {
          log.error("broker_stream_made_again", {
            stream: settings.names.stream,
            message:
              "the stream was gone while the workers ran; made again empty: what it held is lost to the broker, and the ledger sends those deliveries again",
          });
          await ensureStream(jsm, settings, log);
        },
      }),
      up: () => up && !nc.isClosed(),
      cluster: () => ({
        server: nc.getServer(),
        name: nc.info?.cluster ?? null,
        servers: nc.info?.connect_urls ?? [],
        replicas: settings.replicas ?? 1,
      }),
      close: async () => {
        if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
      },
    };
  } catch (error) {
    await nc.close();
    throw error;
  }
}

async function ensureStream(
  jsm: JetStreamManager,
  settings: StreamSettings,
  log: Logger,
) {
  const { names } = settings;
  const stream = {
    name: names.stream,
    subjects: [`${names.stream}.to.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: settings.duplicateWindowMs * NS,
    max_age: (settings.maxAgeMs ?? 7 * 86_400_000) * NS,
    num_replicas: settings.replicas ?? 1,
  };
  try {
    await jsm.streams.info(names.stream);
    await jsm.streams.update(names.stream, stream);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await jsm.streams.add(stream);
  }
  // One durable per subscriber for all tenants, as before the lanes: it
  // would take every new message too. Deleted when it has nothing open; one
  // with messages open is left to be drained (docs/scale.md).
  for (const subscriber of settings.subscribers) {
    let info;
    try {
      info = await jsm.consumers.info(names.stream, subscriber);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      continue;
    }
    if (info.config.filter_subject !== names.filter(subscriber)) continue;
    if (info.num_pending === 0 && info.num_ack_pending === 0) {
      await jsm.consumers.delete(names.stream, subscriber);
      log.info("broker_old_consumer_deleted", { subscriber });
    } else {
      log.warn("broker_old_consumer_left", {
        subscriber,
        pending: info.num_pending,
        ackPending: info.num_ack_pending,
      });
    }
  }
}

/** True for the broker's "no such stream" or "no such consumer". */
export function isNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamNotFound ||
      error.code === JetStreamApiCodes.ConsumerNotFound);
}
