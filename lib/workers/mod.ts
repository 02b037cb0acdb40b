/**
 * Runs the messaging machinery of one process, in three parts: a relay loop
 * per sending service (relays.ts), the consumer loops and the closure audit
 * (consumers.ts), and one LISTEN connection that wakes them (listen.ts).
 * The consumers of the PostgreSQL queue are woken, and handed deliveries by
 * this process's relays, through one buffer whose modes local_queue.ts
 * documents. The fault switches wrap the transport and the dispatcher here
 * (lib/faults), and nowhere else. Any number of processes may run this
 * against one database: leases and SKIP LOCKED keep them off each other's
 * rows.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import {
  type FaultReader,
  faultyDispatcher,
  faultyQueue,
} from "../faults/mod.ts";
import type { AuditOptions } from "../ledger/audit.ts";
import type { Carrier } from "../carriers/carrier.ts";
import type { FairShareOptions } from "../delivery/fair_share.ts";
import type { PauseReader } from "../ledger/pauses.ts";
import { BATCH_REQUEST_MAX } from "../delivery/send.ts";
import { consumerLeaseMs, type Subscriber } from "../delivery/send.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import type { Loop } from "../wake/loop.ts";
import { consumerLoops } from "./consumers.ts";
import { wakeListener } from "./listen.ts";
import { LocalQueue } from "../delivery/local_queue.ts";
import { relayLoops } from "./relays.ts";

export interface MessagingOptions {
  /** The id written into leases; unset, one of this start's own. */
  owner?: string;
  /** For the dedicated LISTEN connection. */
  url: string;
  sql: Sql;
  log: Logger;
  /**
   * The fault switches, which wrap the queue and the dispatcher here;
   * without them nothing is wrapped.
   */
  faults?: FaultReader;
  /**
   * Paused subscribers (lib/ledger/pauses.ts): the consumers' claims and
   * the relays' hand-offs leave their deliveries waiting.
   */
  pauses?: PauseReader;
  /** Services that have an outbox. */
  senders: readonly string[];
  /**
   * What carries the messages (lib/carriers/carrier.ts): where the relays
   * publish or move, and what builds the consumers. Built by the caller,
   * which also closes it.
   */
  transport: Carrier;
  dispatcher: Dispatcher;
  subscribers: Readonly<Record<string, Subscriber>>;
  pollMs: number;
  relayRetryMs: number;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  /** Consumer loops in this process; each holds up to 10 deliveries. */
  consumers?: number;
  relayLeaseMs?: number;
  consumerLeaseMs?: number;
  /** Whether to run relays, consumers, or both (default both). */
  roles?: { relay?: boolean; consume?: boolean };
  /** The closure audit of done deliveries, run beside the consumers. */
  audit?: Omit<AuditOptions, "sql">;
  /**
   * How long after a consumer's batch the audit looks (default 250 ms; a
   * second held up the deliveries around each big batch, see
   * bench/HISTORY.md).
   */
  auditDelayMs?: number;
  /** The process's share between tenants (see consumers.ts). */
  fairShare?: Partial<FairShareOptions>;
  /** Called after a batch changed rows of these tenants (live views). */
  onTouched?: (tenantIds: string[]) => void;
  observeLag?: (seconds: number, service: string) => void;
  observeDelivered?: (seconds: number, subscriber: string) => void;
}

export interface Messaging {
  /** The owner id written into leases by this process. */
  owner: string;
  /**
   * Wakes the relay of `service` now (an in-process hint after a commit);
   * false when this process runs none, or is stopping.
   */
  wake(service: string): boolean;
  wakeConsumers(): void;
  /**
   * Drops, for good, what the transport holds of these tenants (their
   * wipe, once they are closed to work): over JetStream their messages in
   * the stream and their lanes' consumers. The PostgreSQL queue holds
   * nothing but rows, which the wipe deletes.
   */
  forget(tenantIds: readonly string[]): Promise<void>;
  /** Stops claiming, finishes what is in flight, closes the listener. */
  stop(): Promise<void>;
}

/** Starts the loops and the listener; resolves once listening. */
export async function startMessaging(
  options: MessagingOptions,
): Promise<Messaging> {
  const owner = options.owner ?? newOwner();
  // Read once before any move, which hands off by the pairs last read.
  await options.pauses?.();
  const log = options.log.child({ owner });
  // How this process's consumers are woken, and what its relays hand them.
  // Handoffs are joined up to one request's worth, as the share counts.
  const local = new LocalQueue(BATCH_REQUEST_MAX);
  let stopping = false;
  const consumers = (options.roles?.consume ?? true)
    ? await consumerLoops({
      ...options,
      owner,
      log,
      dispatcher: options.faults
        ? faultyDispatcher(options.dispatcher, options.faults)
        : options.dispatcher,
      leaseMs: options.consumerLeaseMs,
      local,
    })
    : undefined;
  const relays: ReadonlyMap<string, Loop> = (options.roles?.relay ?? true)
    ? relayLoops({
      ...options,
      owner,
      log,
      queue: options.faults
        ? faultyQueue(options.transport.queue, options.faults, log)
        : options.transport.queue,
      shortcut: options.transport.shortcut,
      retryMs: options.relayRetryMs,
      leaseMs: options.relayLeaseMs,
      local,
      share: consumers?.share,
      handoffLeaseMs: consumerLeaseMs({
        leaseMs: options.consumerLeaseMs,
        timeoutMs: options.timeoutMs,
      }),
      stopping: () => stopping,
    })
    : new Map();
  const listener = wakeListener({
    url: options.url,
    log,
    owner,
    relays,
    local,
    wakeRepublisher: consumers?.wakeRepublisher,
    pauses: options.pauses,
  });
  await listener.start();
  const loops = [...relays.values(), ...(consumers?.loops ?? [])];
  loops.forEach((l) => l.start());
  log.info("messaging_started", {
    relays: [...relays.keys()],
    consumers: local.consumers.length,
    transport: options.transport.name,
  });
  return {
    owner,
    wake: (service) => {
      // Stopping: let the relays of other processes hear of it.
      if (stopping) return false;
      const relay = relays.get(service);
      relay?.wake();
      return relay !== undefined;
    },
    wakeConsumers: () => local.wakeAll(),
    forget: async (tenantIds) => {
      await options.transport.forget(
        tenantIds,
        Object.keys(options.subscribers),
      );
    },
    stop: async () => {
      stopping = true;
      await Promise.all(loops.map((l) => l.stop()));
      await consumers?.settle();
      await options.dispatcher.drain();
      await listener.stop();
      log.info("messaging_stopped", {});
    },
  };
}

/** A lease owner id of this process: its pid and a random part. */
export function newOwner(): string {
  return `worker-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
}
