/**
 * The transport as one object, as River's driver or Oban's engine: all
 * that differs between the PostgreSQL queue and JetStream, built once
 * where the program is put together and handed to `startMessaging`. No
 * route, read model or loop asks which transport runs; each asks this
 * object for what it needs.
 *
 * - `pgTransport` (postgres/transport.ts): the queue in the outboxes'
 *   database; the relay's one-transaction move; claim loops.
 * - `jetStreamTransport` (jetstream/transport.ts): the stream and its
 *   lanes; publish, then mark; the broker's consumers and the redrives'
 *   republisher; the broker's health.
 */
import type { BrokerCluster } from "./jetstream/stream.ts";
import type { Loop } from "../wake/loop.ts";
import type { Shortcut } from "../relay/move.ts";
import type { ClaimedDelivery } from "./delivery.ts";
import type { ConsumerOptions } from "./postgres/consumer.ts";
import type { Queue } from "./queue.ts";

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

export interface Transport {
  /** For /health and the logs; nothing else reads it. */
  readonly name: "postgres" | "jetstream";
  /** Where the relay publishes the long way (claim, publish, mark). */
  readonly queue: Queue;
  /** The relay's one-transaction move, where the queue shares its database. */
  readonly shortcut?: Shortcut;
  /**
   * A redrive must also hand the message to the transport again: it keeps
   * its own copy apart from PostgreSQL's record (lib/queue/dead_letters.ts
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
