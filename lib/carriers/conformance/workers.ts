/**
 * The test workers: the core's relays and consumers for the test services,
 * on one carrier. Over JetStream the workers connect to the stream (with
 * one durable consumer per test receiver) and run the broker's consumers
 * in place of the PostgreSQL queue's; stop() also closes that connection.
 *
 * The loops themselves (lib/workers' startMessaging) are handed in by the
 * runner: a carrier's room imports nothing of the loops that drive it
 * (tests/core/lib_boundary_test.ts), and the suite lives in that room.
 */
import type { Sql } from "../../db/connect.ts";
import { type Logger, memoryLogger } from "../../log/mod.ts";
import { type FaultReader, pgFaults } from "../../faults/mod.ts";
import type { Dispatcher, Subscriber } from "../../delivery/mod.ts";
import type { Queue } from "../../ledger/mod.ts";
import type { Carrier, Shortcut } from "../carrier.ts";
import {
  type CarrierName,
  type JetStreamServer,
  type OpenCarrier,
  openCarrier,
} from "./carriers.ts";
import {
  RECEIVERS,
  ROUTING,
  SENDER,
  SUBSCRIBERS,
  testDispatcher,
} from "./services.ts";

/**
 * What the suite sets when it starts the loops of one process: a part of
 * startMessaging's options, named as it names them.
 */
export interface LoopOptions {
  /** For the dedicated LISTEN connection. */
  url: string;
  sql: Sql;
  log: Logger;
  faults?: FaultReader;
  senders: readonly string[];
  /** The carrier the relays publish to and the consumers take from. */
  transport: Carrier;
  dispatcher: Dispatcher;
  subscribers: Readonly<Record<string, Subscriber>>;
  pollMs: number;
  relayRetryMs: number;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  relayLeaseMs?: number;
}

/** The loops of one process, running. */
export interface Loops {
  /** The owner id written into leases by this process. */
  owner: string;
  stop(): Promise<void>;
}

/** Starts the loops of one process: startMessaging, or one like it. */
export type StartLoops<
  O extends LoopOptions = LoopOptions,
  L extends Loops = Loops,
> = (options: O) => Promise<L>;

/** What starting test workers takes of the runner (see Harness). */
export interface WorkersHarness<
  O extends LoopOptions = LoopOptions,
  L extends Loops = Loops,
> {
  startLoops: StartLoops<O, L>;
  /** Where JetStream is; required to run workers over it. */
  jetStream?: JetStreamServer;
}

/** What the test workers take besides the loops' own options. */
export type WorkersOptions<O extends LoopOptions = LoopOptions> =
  & Partial<Omit<O, "transport">>
  & {
    /** The carrier the relay publishes to (default postgres). */
    transport?: CarrierName;
    /**
     * JetStream: the stream, which the caller drops; by default one of the
     * workers' own, dropped when they stop.
     */
    stream?: string;
    /** JetStream: the consumers' AckWait (default ACK_WAIT_MS). */
    ackWaitMs?: number;
    /** Wraps the carrier's queue, e.g. to record what the relay published. */
    wrapQueue?: (queue: Queue) => Queue;
    /** Wraps the relay's move into the PostgreSQL queue (when it has one). */
    wrapShortcut?: (shortcut: Shortcut) => Shortcut;
  };

/** The test workers: the loops, and the carrier they run on. */
export type CaseMessaging<L extends Loops = Loops> = L & {
  transport: OpenCarrier;
};

/** A structured log line as the memory logger keeps it. */
export type LogLine = Record<string, unknown>;

/**
 * Starts relays and consumers for the test services, on `transport`, with
 * `db`'s pool; returns them once started, and the lines they log.
 */
export function startWorkers<O extends LoopOptions, L extends Loops>(
  harness: WorkersHarness<O, L>,
  db: { url: string; sql: Sql },
  options: WorkersOptions<O> = {},
): { messaging: Promise<CaseMessaging<L>>; lines: LogLine[] } {
  const { logger, lines } = memoryLogger("info");
  const {
    transport: name = "postgres",
    stream,
    ackWaitMs,
    wrapQueue,
    wrapShortcut,
    ...overrides
  } = options;
  const messaging = (async (): Promise<CaseMessaging<L>> => {
    const transport = await openCarrier(name, db.sql, {
      routing: ROUTING,
      subscribers: RECEIVERS,
      jetStream: harness.jetStream,
      stream,
      ackWaitMs,
    });
    let m: L;
    try {
      const loopOptions: LoopOptions = {
        url: db.url,
        sql: db.sql,
        log: logger,
        faults: pgFaults(db.sql),
        senders: [SENDER],
        transport: {
          ...transport.transport,
          queue: wrapQueue ? wrapQueue(transport.queue) : transport.queue,
          shortcut: transport.shortcut && wrapShortcut
            ? wrapShortcut(transport.shortcut)
            : transport.shortcut,
        },
        dispatcher: testDispatcher(db.sql),
        subscribers: SUBSCRIBERS,
        pollMs: 200,
        relayRetryMs: 100,
        retryDelaysMs: [50, 100, 150],
        timeoutMs: 2000,
      };
      // The suite's options and the caller's overrides of O's own make a
      // whole O, which the type system cannot follow through the spread.
      const all = { ...loopOptions, ...overrides } as unknown as O;
      m = await harness.startLoops(all);
    } catch (error) {
      await transport.close();
      throw error;
    }
    return {
      ...m,
      transport,
      stop: async () => {
        try {
          await m.stop();
        } finally {
          await transport.close();
        }
      },
    };
  })();
  return { messaging, lines };
}

/**
 * Starts workers, runs `fn`, and always stops them, so that a failing
 * assertion never leaves a loop or a listener running.
 */
export async function withWorkers<O extends LoopOptions, L extends Loops>(
  harness: WorkersHarness<O, L>,
  db: { url: string; sql: Sql },
  options: WorkersOptions<O>,
  fn: (
    workers: { messaging: CaseMessaging<L>; lines: LogLine[] },
  ) => Promise<void>,
) {
  const { messaging, lines } = startWorkers(harness, db, options);
  const m = await messaging;
  try {
    await fn({ messaging: m, lines });
  } finally {
    await m.stop();
  }
}
