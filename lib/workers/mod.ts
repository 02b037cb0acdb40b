/**
 * Runs the messaging machinery of one process: a relay loop per sending
 * service, a few consumer loops, and one LISTEN connection that wakes them.
 * Any number of processes may run this against one database: leases and
 * SKIP LOCKED keep them off each other's rows.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import {
  type FaultReader,
  faultyDispatcher,
  faultyQueue,
} from "../faults/mod.ts";
import { OUTBOX_CHANNEL } from "../outbox/channel.ts";
import {
  consumeOnce,
  CONSUMER_BATCH_SIZE,
  type ConsumerOptions,
} from "../queue/postgres/mod.ts";
import { consumerLeaseMs, type Subscriber } from "../queue/send.ts";
import { FairShare, type FairShareOptions } from "../queue/fair_share.ts";
import { LocalQueue } from "./local_queue.ts";
import {
  type BrokerLoops,
  brokerLoops,
  type JetStream,
} from "../queue/jetstream/mod.ts";
import { QUEUE_CHANNEL } from "../queue/channel.ts";
import type { Queue } from "../queue/queue.ts";
import type { Dispatcher } from "../queue/transport.ts";
import { relayOnce } from "../relay/relay.ts";
import type { Shortcut } from "../relay/move.ts";
import { auditOnce, type AuditOptions } from "../queue/audit.ts";
import { Listener } from "../wake/listener.ts";
import { Loop } from "../wake/loop.ts";

export interface MessagingOptions {
  /** For the dedicated LISTEN connection. */
  url: string;
  sql: Sql;
  log: Logger;
  faults: FaultReader;
  /** Services that have an outbox. */
  senders: readonly string[];
  queue: Queue;
  /**
   * The queue shares the outboxes' database (PgMove over the PgQueue of
   * `queue`): the relays move rows into it in one transaction.
   */
  shortcut?: Shortcut;
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
   * How long after a consumer's batch the audit looks (default 250 ms): it
   * then takes everything done meanwhile in one batch, away from the moments
   * a delivery is waiting for the cores. A second made each batch big
   * enough to hold up the deliveries around it: at 23 paid orders/s on 2
   * cores, p99 from webhook to six applied 167 to 201 ms with 1000 ms, 91
   * and 105 ms with 250 ms (bench --only steady, two or three runs).
   */
  auditDelayMs?: number;
  /**
   * The process's share between sandboxes (lib/queue/fair_share.ts). By
   * default a sandbox may hold half of the process's consumers' batches,
   * and half of that for one subscriber, every batch may be left running
   * on its own, and a batch waits 250 ms
   * for its slowest deliveries: longer than a delivery takes on a loaded
   * machine, far shorter than a slow receiver's timeout.
   */
  fairShare?: Partial<FairShareOptions>;
  /**
   * The queue is JetStream (`queue` is its JetStreamQueue): its consumers,
   * one per subscriber, take the place of the PostgreSQL queue's, and a
   * republisher gives redriven messages back to the broker. `ackWaitMs` is
   * the consumers' AckWait, which their lease follows.
   */
  broker?: { stream: JetStream; ackWaitMs: number; perSubscriber?: number };
  /** Called after a batch changed rows of these sandboxes (live views). */
  onTouched?: (sandboxIds: string[]) => void;
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
  wakeRelay(service: string): boolean;
  wakeConsumers(): void;
  /** Stops claiming, finishes what is in flight, closes the listener. */
  stop(): Promise<void>;
}

/** Starts the loops and the listener; resolves once listening. */
export async function startMessaging(
  options: MessagingOptions,
): Promise<Messaging> {
  const owner = `worker-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const log = options.log.child({ owner });
  const relays = new Map<string, Loop>();
  // How this process's consumers are woken, and what its relay hands them
  // (lib/workers/local_queue.ts).
  const local = new LocalQueue(CONSUMER_BATCH_SIZE);
  const consumers = local.consumers;
  const wakeConsumers = () => local.hint();
  let stopping = false;
  const handoffLeaseMs = consumerLeaseMs({
    leaseMs: options.consumerLeaseMs,
    timeoutMs: options.timeoutMs,
  });
  // What a relay of this process published is for its consumers too: wake
  // one as soon as the publish (or the move) has committed, without waiting
  // for the relay's mark or for the NOTIFY to come back.
  // The fault switches wrap the transport and the dispatcher, here only.
  const inner = faultyQueue(options.queue, options.faults, log);
  const queue: Queue = {
    diverted: () => inner.diverted!(),
    publish: async (messages) => {
      const published = await inner.publish(messages);
      if (published > 0) wakeConsumers();
      return published;
    },
  };
  let shortcut: Shortcut | undefined;
  if (options.shortcut) {
    const direct = options.shortcut;
    shortcut = {
      move: async (service, limit, moveOptions) => {
        const here = consumers.length > 0;
        const handoff = here && !stopping && local.anyIdle
          ? { owner, leaseMs: handoffLeaseMs, max: CONSUMER_BATCH_SIZE }
          : undefined;
        // The move's NOTIFY (for other processes' consumers) names this
        // process when its consumers are woken here, so that its own listener
        // skips it: heard, it ran a second claim that found nothing.
        const moved = await direct.move(service, limit, {
          ...moveOptions,
          wokenBy: here ? owner : undefined,
          handoff,
        });
        if (moved.handed.length > 0) local.hand(moved.handed);
        else if (moved.published > 0) wakeConsumers();
        return moved;
      },
    };
  }
  if (options.roles?.relay ?? true) {
    for (const service of options.senders) {
      relays.set(
        service,
        new Loop({
          name: `relay:${service}`,
          log,
          pollMs: options.pollMs,
          onTouched: options.onTouched,
          tick: () =>
            relayOnce({
              sql: options.sql,
              service,
              queue,
              shortcut,
              owner,
              log,
              retryMs: options.relayRetryMs,
              leaseMs: options.relayLeaseMs,
              observeLag: options.observeLag,
            }),
        }),
      );
    }
  }
  let auditor: Loop | undefined;
  if ((options.roles?.consume ?? true) && options.audit) {
    const audit = options.audit;
    auditor = new Loop({
      name: "audit",
      log,
      pollMs: options.pollMs,
      onTouched: options.onTouched,
      tick: () => auditOnce({ ...audit, sql: options.sql }),
    });
  }
  // The console reads the few done deliveries not yet audited directly, so
  // the audit may lag; woken after every batch, it ran two transactions and
  // seven statements in the middle of the next message's path.
  let auditTimer: ReturnType<typeof setTimeout> | undefined;
  const wakeAuditor = () => {
    if (!auditor || auditTimer !== undefined) return;
    auditTimer = setTimeout(() => {
      auditTimer = undefined;
      auditor?.wake();
    }, options.auditDelayMs ?? 250);
  };
  const slots = (options.consumers ?? 4) * CONSUMER_BATCH_SIZE;
  const perSandbox = Math.max(CONSUMER_BATCH_SIZE, Math.floor(slots / 2));
  const share = new FairShare({
    perSandbox,
    perLane: Math.ceil(perSandbox / 2),
    maxDetached: slots,
    stragglerMs: 250,
    ...options.fairShare,
  });
  const consumerOptions: ConsumerOptions = {
    sql: options.sql,
    owner,
    log,
    dispatcher: faultyDispatcher(options.dispatcher, options.faults),
    subscribers: options.subscribers,
    retryDelaysMs: options.retryDelaysMs,
    timeoutMs: options.timeoutMs,
    leaseMs: options.consumerLeaseMs,
    observeDelivered: options.observeDelivered,
    // A full batch: there is probably more, let an idle one help.
    onFullBatch: wakeConsumers,
    share,
    // Stragglers recorded: their sandbox may have rows it was held back
    // from, and live views show the change.
    onLateFinished: (ids) => {
      wakeAuditor();
      options.onTouched?.(ids);
      wakeConsumers();
    },
  };
  let broker: BrokerLoops | undefined;
  if ((options.roles?.consume ?? true) && options.broker) {
    broker = await brokerLoops({
      ...consumerOptions,
      ...options.broker,
      pollMs: options.pollMs,
      onTouched: (ids) => {
        wakeAuditor();
        options.onTouched?.(ids);
      },
    });
  } else if (options.roles?.consume ?? true) {
    for (let i = 0; i < (options.consumers ?? 4); i++) {
      const loop: Loop = new Loop({
        name: `consumer:${i}`,
        log,
        pollMs: options.pollMs,
        onTouched: (ids) => {
          wakeAuditor();
          options.onTouched?.(ids);
        },
        tick: () =>
          consumeOnce({
            ...consumerOptions,
            onClaimSent: () => local.claimSent(loop),
            handed: () => local.take(loop),
          }),
      });
      local.add(loop);
    }
  }
  const wakeAll = () => {
    relays.forEach((r) => r.wake());
    local.wakeAll();
  };
  const listener = new Listener({
    url: options.url,
    channels: [OUTBOX_CHANNEL, QUEUE_CHANNEL],
    log,
    onNotify: (channel, payload) => {
      if (channel === OUTBOX_CHANNEL) relays.get(payload)?.wake();
      // A move's hint that names this process was answered here already.
      else if (payload !== owner) {
        wakeConsumers();
        broker?.wakeRepublisher();
      }
    },
    // After a reconnect, notifications sent meanwhile are lost: look now.
    onReconnect: wakeAll,
  });
  await listener.start();
  relays.forEach((r) => r.start());
  consumers.forEach((c) => c.start());
  broker?.loops.forEach((l) => l.start());
  auditor?.start();
  log.info("messaging_started", {
    relays: [...relays.keys()],
    consumers: consumers.length,
    broker: broker ? broker.loops.length : undefined,
  });
  return {
    owner,
    wakeRelay: (service) => {
      // Stopping: let the relays of other processes hear of it.
      if (stopping) return false;
      const relay = relays.get(service);
      relay?.wake();
      return relay !== undefined;
    },
    wakeConsumers: () => local.wakeAll(),
    stop: async () => {
      stopping = true;
      clearTimeout(auditTimer);
      await Promise.all(
        [
          ...relays.values(),
          ...consumers,
          ...(broker?.loops ?? []),
          ...(auditor ? [auditor] : []),
        ].map((l) => l.stop()),
      );
      await broker?.settle();
      // Stragglers end by their timeout at the latest, and in-process
      // receivers a consumer gave up on may still be answering.
      await share.settle();
      // Handed off after the consumers' last look: theirs to send, not to
      // leave leased until the lease runs out.
      while (local.handing) {
        await consumeOnce({
          ...consumerOptions,
          batchesPerTick: 1,
          handed: () => local.take(),
        }).catch((error) => log.error("handoff_unsent", { error }));
      }
      await options.dispatcher.drain();
      await listener.stop();
      log.info("messaging_stopped", {});
    },
  };
}
