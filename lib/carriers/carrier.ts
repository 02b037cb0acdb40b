/**
 * The transport as one object, as River's driver or Oban's engine: all
 * that differs between the PostgreSQL queue and JetStream, built once
 * where the program is put together and handed to `startMessaging`. No
 * route, read model or loop asks which transport runs; each asks this
 * object for what it needs.
 *
 * - `postgresCarrier` (postgres/transport.ts): the queue in the outboxes'
 *   database; the relay's one-transaction move; claim loops.
 * - `jetStreamCarrier` (jetstream/transport.ts): the stream and its
 *   lanes; publish, then mark; the broker's consumers and the redrives'
 *   republisher; the broker's health.
 */
import type { BrokerCluster } from "./jetstream/stream.ts";
import type { Loop } from "../wake/loop.ts";
import type { Fragment, TxSql } from "../db/connect.ts";
import type { Handoff } from "../ledger/store_sql.ts";
import type { ClaimedDelivery } from "../ledger/delivery.ts";
import type { ConsumerOptions } from "./postgres/consumer.ts";
import type { Queue } from "../ledger/queue.ts";

// What the relay publishes to, as every carrier takes it: the relay
// speaks to a carrier alone.
export { PartialPublish, type Queue } from "../ledger/queue.ts";

/** What one move from an outbox into the queue did. */
export interface Moved {
  /** Outbox rows moved (and deleted). */
  rows: number;
  /** Of those, messages the queue did not have yet. */
  published: number;
  /** The tenants of the rows moved. */
  tenantIds: string[];
  /** Seconds from each row's creation to its publish. */
  lagSeconds: number[];
  /** The moved messages' trace contexts, where tracing is on (lib/trace). */
  traceparents: string[];
  /**
   * Other moves of this outbox held every slot (see PgMove's `slots`):
   * nothing was looked at, and rows may well be due.
   */
  busy: boolean;
  /**
   * The deliveries this move stored already claimed, for the consumer of
   * `MoveOptions.handoff`: the first, as many as it had room for (none
   * without one).
   */
  handed: ClaimedDelivery[];
  /**
   * A move that handed deliveries off also stored some pending: those past
   * the handoff's room, or of a lane or tenant its `closed` named. Its
   * NOTIFY skips this process, so the caller wakes a consumer of its own
   * for them.
   */
  leftPending: boolean;
}

export interface MoveOptions {
  /**
   * Tenants whose rows are left to the long way (claim, publish, mark):
   * those the queue diverts, where a decorator acts (lib/faults). A
   * subquery of tenant ids (`Diverted.query`), run in the move's own
   * snapshot: a switch turned on before a row was written is always seen,
   * where a list read before the move could be a moment old.
   */
  skip?: (sql: TxSql) => Fragment;
  /**
   * The process that wakes its own consumers after the move: the move's
   * NOTIFY names it, and that process's listener skips it.
   */
  wokenBy?: string;
  handoff?: Handoff;
}

/**
 * A transport that lives in the sender's database, as the relay sees it:
 * due outbox rows moved into the queue in one transaction of its own.
 */
export interface Shortcut {
  move(
    service: string,
    limit: number,
    options?: MoveOptions,
  ): Promise<Moved>;
}

/** How a process's consumer loops are reached: its wake-ups and hand-offs. */
export interface LocalConsumers {
  /** Makes `loop` one that this process's hints and hand-offs reach. */
  add(loop: Loop): void;
  /** Called as `loop`'s claim goes out (a hint before it is answered). */
  claimSent(loop: Loop): void;
  /** Deliveries a relay of this process handed to `loop`, if any. */
  take(loop?: Loop): ClaimedDelivery[] | undefined;
}

/** What the transport's consumers are built with. */
export interface ConsumeContext {
  /** What every consumer sends with and records with. */
  consumer: ConsumerOptions;
  /** Consumer loops the process runs (the PostgreSQL queue's claims). */
  count: number;
  pollMs: number;
  onTouched: (tenantIds: string[]) => void;
  local: LocalConsumers;
}

/** A process's consumer loops, as the transport builds them. */
export interface Consumers {
  loops: Loop[];
  /** Wakes what gives redriven messages back to the transport, if any. */
  wakeRepublisher?: () => void;
  /** After the loops stopped: waits for the sends still under way. */
  settle(): Promise<void>;
}

export interface Carrier {
  /** For /health and the logs; nothing else reads it. */
  readonly name: "postgres" | "jetstream";
  /** Where the relay publishes the long way (claim, publish, mark). */
  readonly queue: Queue;
  /** The relay's one-transaction move, where the queue shares its database. */
  readonly shortcut?: Shortcut;
  /**
   * A redrive must also hand the message to the transport again: it keeps
   * its own copy apart from PostgreSQL's record (lib/ledger/dead_letters.ts
   * `republish`).
   */
  readonly redriveRepublishes: boolean;
  /** Builds (does not start) a process's consumer loops. */
  consumers(context: ConsumeContext): Promise<Consumers>;
  /** Drops for good what it holds of these tenants (their wipe). */
  forget(
    tenantIds: readonly string[],
    subscribers: readonly string[],
  ): Promise<void>;
  /** Whether the broker answers; absent where there is none. */
  up?(): boolean;
  /** The broker's cluster as this process sees it; absent with no broker. */
  cluster?(): BrokerCluster;
  /** Closes its connections (those it opened). */
  close(): Promise<void>;
}
