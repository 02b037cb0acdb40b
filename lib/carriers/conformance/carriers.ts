/**
 * The carriers the suite runs on, opened as the test services use them:
 * the PostgreSQL queue (the ledger, and the relay's one-transaction move
 * into it), or NATS JetStream (its carrier over the ledger, on a stream of
 * the case's own). For JetStream, `view` reads the stream and its consumers
 * as the broker holds them, so that a scenario can prove the messages went
 * through it.
 */
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Sql } from "../../db/connect.ts";
import { memoryLogger } from "../../log/mod.ts";
import { consumerLeaseMs } from "../../delivery/mod.ts";
import { Ledger, type Queue, type Routing } from "../../ledger/mod.ts";
import type { RedriveOptions } from "../../ledger/dead_letters.ts";
import type { Carrier, Shortcut } from "../carrier.ts";
import { postgresCarrier } from "../postgres/mod.ts";
import {
  type JetStream,
  jetStreamCarrier,
  openJetStream,
  StreamNames,
} from "../jetstream/mod.ts";
import { StreamView } from "./broker.ts";

export type CarrierName = "postgres" | "jetstream";

/** Every carrier of the suite, in the order it runs them. */
export const CARRIERS: readonly CarrierName[] = ["postgres", "jetstream"];

/**
 * The test workers' AckWait: the consumers' lease for their 2 s timeout
 * (10 s), long enough that nothing is redelivered by AckWait unless a
 * scenario means it to be.
 */
export const ACK_WAIT_MS = consumerLeaseMs({ timeoutMs: 2000 });

/**
 * Where the cases' streams are: the runner's NATS server, and a fresh
 * stream name for one case (unique within the run, as cases run at once).
 */
export interface JetStreamServer {
  url: string;
  streamName(): string;
}

export interface CarrierOptions {
  /** Who gets what. */
  routing: Routing;
  /** JetStream: the subscribers that get a durable consumer. */
  subscribers: readonly string[];
  /** JetStream: the server; required to open JetStream. */
  jetStream?: JetStreamServer;
  /**
   * JetStream: the stream to use, which the caller drops; by default one
   * of the carrier's own (named by `jetStream`), dropped by `close`.
   */
  stream?: string;
  /** JetStream: the consumers' AckWait (default ACK_WAIT_MS). */
  ackWaitMs?: number;
}

/** One carrier, open. */
export interface OpenCarrier {
  name: CarrierName;
  /** The carrier, as startMessaging takes it. */
  transport: Carrier;
  /** What the relay publishes to. */
  queue: Queue;
  /** PostgreSQL: the relay's one-transaction move into `queue`. */
  shortcut?: Shortcut;
  /** JetStream: startMessaging's `broker`. */
  broker?: { stream: JetStream; ackWaitMs: number };
  /** JetStream: the stream, as the broker holds it. */
  view?: StreamView;
  /** How a redrive reaches this carrier (the operator's choice). */
  redrive: RedriveOptions;
  /** Closes the connection; drops the stream if it was the carrier's own. */
  close(): Promise<void>;
}

/** Opens `name`, storing the deliveries' rows through `sql`. */
export async function openCarrier(
  name: CarrierName,
  sql: Sql,
  options: CarrierOptions,
): Promise<OpenCarrier> {
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
  const server = jetStreamOf(options);
  const own = options.stream === undefined;
  const streamName = options.stream ?? server.streamName();
  const ackWaitMs = options.ackWaitMs ?? ACK_WAIT_MS;
  let stream: JetStream;
  try {
    stream = await openStream(
      server.url,
      streamName,
      options.subscribers,
      ackWaitMs,
    );
  } catch (error) {
    if (own) await dropStream(server.url, streamName);
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
      if (own) await dropStream(server.url, streamName);
    },
  };
}

function jetStreamOf(options: { jetStream?: JetStreamServer }) {
  if (!options.jetStream) {
    throw new Error("JetStream asked for, and no JetStream server given");
  }
  return options.jetStream;
}

/**
 * Opens (creating it if need be) a stream at `url`, as an app opens its
 * own; its lanes' consumers are made as messages come.
 */
export async function openStream(
  url: string,
  name: string,
  subscribers: readonly string[],
  ackWaitMs = ACK_WAIT_MS,
): Promise<JetStream> {
  return await openJetStream(url, {
    names: new StreamNames(name),
    subscribers,
    // Two minutes, the least an app should set: well past any relay retry
    // a scenario makes.
    duplicateWindowMs: 120_000,
    ackWaitMs,
  }, memoryLogger("error").logger);
}

/** Deletes a stream (and its consumers) at `url`; fine if it is gone. */
export async function dropStream(url: string, name: string): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}
