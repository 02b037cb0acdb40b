/**
 * One object for one process's messaging, as graphile-worker's `run` or
 * River's client: built by `createMessaging` from the options that differ
 * from the defaults, started and stopped, and asked for everything an
 * operator does (redrive, refuse, supersede, release) and for its health.
 * No caller pairs the parts by hand or asks which carrier runs.
 */
import { connect, type Sql } from "./db/connect.ts";
import { renewablePool } from "./db/reserved.ts";
import { createLogger, type Logger } from "./log/mod.ts";
import type { FaultReader } from "./faults/mod.ts";
import type { AuditOptions } from "./ledger/audit.ts";
import { deadLetters } from "./ledger/dead_letters.ts";
import {
  type OperatorDeadLetters,
  type PreviewReceiver,
  previewRedrive,
} from "./redrive_preview.ts";
import type { PauseReader } from "./ledger/pauses.ts";
import type { Routing } from "./ledger/queue.ts";
import type { Carrier } from "./carriers/carrier.ts";
import { postgresCarrier } from "./carriers/postgres/carrier.ts";
import type { BrokerCluster } from "./carriers/jetstream/stream.ts";
import { Dispatcher } from "./delivery/dispatcher.ts";
import type { FairShareOptions } from "./delivery/fair_share.ts";
import type { Subscriber } from "./delivery/send.ts";
import {
  type Released,
  type ReleaseOptions,
  releaseParked,
} from "./relay/release.ts";
import { type Messaging as Loops, startMessaging } from "./workers/mod.ts";
import { type Heartbeat, startHeartbeat } from "./workers/heartbeat.ts";

/** The timings and sizes of {@link createMessaging}, every one defaulted. */
export interface Tuning {
  /** The slow poll behind LISTEN/NOTIFY, which a missed notification needs. */
  pollMs: number;
  /** How long a relay waits before it publishes a failed batch again. */
  relayRetryMs: number;
  /** A failed delivery's retries, one delay each; then it is dead. */
  retryDelaysMs: readonly number[];
  /** How long a subscriber has to answer a batch. */
  timeoutMs: number;
  /** The relay's lease on outbox rows it claims the long way. */
  relayLeaseMs: number;
  /**
   * Connections of the relay's own, for the one-transaction move of the
   * PostgreSQL carrier (one move each at a time).
   */
  relayConnections: number;
  /** Consumer loops in the process; each holds up to a batch. */
  consumers: number;
  /** A consumer's lease; unset, it follows `timeoutMs` (lib/delivery/send.ts). */
  consumerLeaseMs?: number;
  /** How long after a consumer's batch the closure audit looks. */
  auditDelayMs: number;
  /** The process's share between tenants (lib/delivery/fair_share.ts). */
  fairShare: Partial<FairShareOptions>;
  /**
   * How often a started process writes its heartbeat row (queue.workers);
   * three missed beats and readers call it silent.
   */
  beatMs: number;
}

/**
 * The defaults, with the reason for each number: a poll of 5 s bounds the
 * delay of a missed notification; retries at 1, 5 and 25 s give a receiver
 * half a minute to come back before an operator is asked; 30 s of relay
 * lease outlasts any publish; two relay connections keep one move running
 * while the other plans; four consumer loops keep two cores busy; a beat
 * every 5 s finds a dead worker within 15 s, at one small write each.
 */
export const TUNING: Readonly<Tuning> = {
  pollMs: 5_000,
  relayRetryMs: 30_000,
  retryDelaysMs: [1_000, 5_000, 25_000],
  timeoutMs: 5_000,
  relayLeaseMs: 30_000,
  relayConnections: 2,
  consumers: 4,
  auditDelayMs: 250,
  fairShare: {},
  beatMs: 5_000,
};

/** A carrier not opened yet: what it is, and how to open it. */
export interface CarrierPlan {
  readonly name: Carrier["name"];
  /** As the carrier's own `redriveRepublishes`, known before it opens. */
  readonly redriveRepublishes: boolean;
  open(): Promise<Carrier>;
}

/** The plan of a carrier built already: `open()` gives it back. */
export function builtCarrier(carrier: Carrier): CarrierPlan {
  return {
    name: carrier.name,
    redriveRepublishes: carrier.redriveRepublishes,
    open: () => Promise.resolve(carrier),
  };
}

export interface MessagingOptions {
  /**
   * The ledger's database (the `queue` schema): its pool, and its URL for
   * the dedicated LISTEN connection and the relay's own connections.
   */
  ledger: { sql: Sql; url: string };
  /** Event type to subscribers, read when a message is published. */
  routing: Routing;
  /** Services that have an outbox. */
  senders: readonly string[];
  /** Where each subscriber is reached. */
  subscribers: Readonly<Record<string, Subscriber>>;
  /**
   * What carries the messages. Default: PostgreSQL, in the ledger's
   * database, with `tuning.relayConnections` connections for the relay.
   */
  carrier?: CarrierPlan;
  /** Sends requests to subscribers. Default: `fetch`, nothing in process. */
  dispatcher?: Dispatcher;
  /** Default: JSON lines on stdout, at info. */
  log?: Logger;
  /** Fault switches, which wrap the carrier and the dispatcher. Default: none. */
  faults?: FaultReader;
  /** Paused subscribers, whose deliveries wait. Default: none. */
  pauses?: PauseReader;
  /** Whether this process runs relays, consumers, or both (default both). */
  roles?: { relay?: boolean; consume?: boolean };
  /** The closure audit of done deliveries, beside the consumers. */
  audit?: Omit<AuditOptions, "sql">;
  /**
   * The receivers this process can run, by subscriber, for a redrive's
   * preview (`deadLetters.preview`): their database, and the same apply
   * their inbox handler runs. A subscriber missing here is previewed as
   * `fail`, "not in this process".
   */
  receivers?: Readonly<Record<string, PreviewReceiver>>;
  tuning?: Partial<Tuning>;
  /** The program's version, shown beside each worker. Default: "unknown". */
  version?: string;
  /**
   * The id this process writes into its leases and its heartbeat. Unset, a
   * new one per start. A process that runs one messaging per ledger (a
   * database each) gives them all one id, so that readers list the process
   * once ({@link mergeWorkers}).
   */
  owner?: string;
  /** What the process is told as work happens (live views, metrics). */
  hooks?: {
    onTouched?: (tenantIds: string[]) => void;
    observeLag?: (seconds: number, service: string) => void;
    observeDelivered?: (seconds: number, subscriber: string) => void;
  };
}

/** What `Messaging.health()` answers. */
export interface MessagingHealth {
  carrier: Carrier["name"];
  /** Whether the broker answers; absent where there is none, or not open. */
  broker?: "up" | "down";
  /** The broker's cluster as this process sees it. */
  cluster?: BrokerCluster;
}

export interface Messaging {
  /** The owner id written into leases; set once started. */
  readonly owner: string | undefined;
  /** Opens the carrier, starts the loops; resolves once listening. */
  start(): Promise<void>;
  /** Stops claiming, finishes what is in flight, closes the carrier. */
  stop(): Promise<void>;
  /** Wakes the relay of `service` now; false where none runs here. */
  wake(service: string): boolean;
  wakeConsumers(): void;
  health(): MessagingHealth;
  /** Redrive, refuse, supersede and preview, as the carrier needs them. */
  readonly deadLetters: OperatorDeadLetters;
  readonly outbox: {
    /** Makes parked rows due now, and wakes their relays. */
    release(sql: Sql, options: ReleaseOptions): Promise<Released>;
  };
  /** Drops what the carrier holds of these tenants (their wipe). */
  forget(tenantIds: readonly string[]): Promise<void>;
}

/**
 * Builds a process's messaging; nothing runs until `start()`. A process
 * that only acts as an operator (a web app beside separate workers) never
 * starts it and still asks it to redrive.
 *
 * @example
 * ```ts
 * const messaging = createMessaging({
 *   ledger: { sql, url },
 *   routing: { SignupCompleted: ["mailer"] },
 *   senders: ["accounts"],
 *   subscribers: { mailer: { url: "http://mailer.internal/inbox" } },
 * });
 * await messaging.start();
 * ```
 */
export function createMessaging(options: MessagingOptions): Messaging {
  const tuning: Tuning = { ...TUNING, ...options.tuning };
  const log = options.log ?? createLogger("info");
  const plan = options.carrier ?? postgresPlan(options, tuning, log);
  let carrier: Carrier | undefined;
  let loops: Loops | undefined;
  let heartbeat: Heartbeat | undefined;
  // Work done is a claim seen: the heartbeat reports the last one.
  const claimed =
    <A extends unknown[]>(hook?: (...args: A) => void) => (...args: A) => {
      heartbeat?.claimed();
      hook?.(...args);
    };
  const messaging: Messaging = {
    get owner() {
      return loops?.owner;
    },
    start: async () => {
      carrier = await plan.open();
      try {
        loops = await startMessaging({
          owner: options.owner,
          url: options.ledger.url,
          sql: options.ledger.sql,
          log,
          faults: options.faults,
          pauses: options.pauses,
          senders: options.senders,
          transport: carrier,
          dispatcher: options.dispatcher ?? new Dispatcher(),
          subscribers: options.subscribers,
          pollMs: tuning.pollMs,
          relayRetryMs: tuning.relayRetryMs,
          retryDelaysMs: tuning.retryDelaysMs,
          timeoutMs: tuning.timeoutMs,
          consumers: tuning.consumers,
          relayLeaseMs: tuning.relayLeaseMs,
          consumerLeaseMs: tuning.consumerLeaseMs,
          auditDelayMs: tuning.auditDelayMs,
          fairShare: tuning.fairShare,
          roles: options.roles,
          audit: options.audit,
          onTouched: claimed(options.hooks?.onTouched),
          observeLag: claimed(options.hooks?.observeLag),
          observeDelivered: claimed(options.hooks?.observeDelivered),
        });
        heartbeat = await startHeartbeat({
          sql: options.ledger.sql,
          log,
          senders: (options.roles?.relay ?? true) ? options.senders : [],
          beat: {
            id: loops.owner,
            host: Deno.hostname(),
            pid: Deno.pid,
            roles: [
              ...(options.roles?.relay ?? true) ? ["relay" as const] : [],
              ...(options.roles?.consume ?? true) ? ["consume" as const] : [],
            ],
            transport: carrier.name,
            version: options.version ?? "unknown",
            beatMs: tuning.beatMs,
          },
        });
      } catch (error) {
        await loops?.stop();
        loops = undefined;
        await carrier.close();
        carrier = undefined;
        throw error;
      }
    },
    stop: async () => {
      await loops?.stop();
      // After the loops: it beats while they finish what is in flight.
      await heartbeat?.stop();
      heartbeat = undefined;
      await carrier?.close();
      loops = undefined;
      carrier = undefined;
    },
    wake: (service) => loops?.wake(service) ?? false,
    wakeConsumers: () => loops?.wakeConsumers(),
    health: () => ({
      carrier: plan.name,
      ...(carrier?.up ? { broker: carrier.up() ? "up" : "down" } : {}),
      ...(carrier?.cluster ? { cluster: carrier.cluster() } : {}),
    }),
    deadLetters: {
      ...deadLetters(plan.redriveRepublishes),
      preview: (sql, tenantId, ids, previewOptions = {}) =>
        previewRedrive(sql, tenantId, ids, {
          receivers: options.receivers ?? {},
          timeoutMs: previewOptions.timeoutMs,
        }),
    },
    outbox: { release: releaseParked },
    forget: async (tenantIds) => {
      await loops?.forget(tenantIds);
    },
  };
  return messaging;
}

/**
 * The default carrier: the PostgreSQL queue in the ledger's database, the
 * relay's moves on connections of their own. Renewable: two connections
 * are few enough that a server restart can leave both held for good
 * (lib/db/reserved.ts).
 */
function postgresPlan(
  options: MessagingOptions,
  tuning: Tuning,
  log: Logger,
): CarrierPlan {
  return {
    name: "postgres",
    redriveRepublishes: false,
    open: () => {
      const sql = renewablePool(() =>
        connect(options.ledger.url, {
          max: tuning.relayConnections,
          applicationName: "messaging-relay",
        }), log);
      return Promise.resolve(postgresCarrier({
        sql,
        routing: options.routing,
        slots: tuning.relayConnections,
        close: async () => await sql.end({ timeout: 5 }),
      }));
    },
  };
}
