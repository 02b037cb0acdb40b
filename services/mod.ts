/**
 * The bakery's messaging, assembled with lib/'s `createMessaging`: the
 * relay for the two senders and the consumers, on the carrier QUEUE names,
 * delivering to the receivers' in-process endpoints
 * (receivers/endpoints.ts). Everything generic comes from lib/.
 */
import { connect, type Sql } from "../lib/db/connect.ts";
import { renewablePool } from "../lib/db/reserved.ts";
import type { Logger } from "../lib/log/mod.ts";
import type { Config } from "../config.ts";
import { type FaultReader, pgFaults } from "../lib/faults/mod.ts";
import { consumerLease, natsMaxAgeDays } from "../promises.ts";
import { Ledger, pgPauses } from "../lib/ledger/mod.ts";
import { type Carrier, postgresCarrier } from "../lib/carriers/mod.ts";
import {
  type JetStream,
  jetStreamCarrier,
  openJetStream,
  StreamNames,
} from "../lib/carriers/jetstream/mod.ts";
import {
  createMessaging,
  type Messaging,
  type MessagingOptions,
  newOwner,
  TUNING,
} from "../lib/mod.ts";
import { ROUTING, SENDERS, SUBSCRIBERS } from "./routing.ts";
import type { ServiceDatabases } from "./databases.ts";
import {
  bakeryDispatcher,
  bakerySubscribers,
  previewReceivers,
} from "./receivers/endpoints.ts";
import {
  coalescingWaker,
  type LocalRelays,
  setOutboxWaker,
} from "../lib/outbox/mod.ts";

export interface BakeryDeps {
  sql: Sql;
  /** Split mode's databases; `sql` is then the one the workers run in. */
  databases?: ServiceDatabases;
  /** The JetStream stream, when not NATS_STREAM (split mode: a sender's). */
  natsStream?: string;
  log: Logger;
  config: Config;
  faults?: FaultReader;
}

/**
 * The relay's moves have connections of their own, one per move slot
 * (lib/messaging.ts `Tuning.relayConnections`). On the process's pool they
 * went round all its connections, and each connection planned the move and
 * filled its caches for itself, again after every 30 s idle. What that was
 * worth, measured: bench/HISTORY.md, "the relay's own connections".
 */
export const RELAY_CONNECTIONS = TUNING.relayConnections;

/**
 * Opens the JetStream transport of QUEUE=jetstream: the stream named
 * NATS_STREAM, whose lanes (a durable consumer per subscriber and sandbox)
 * are made as messages come. The duplicate window
 * covers the relay's retry horizon twice over (a lost PubAck is published
 * again after RELAY_RETRY_MS; a dead relay's rows are taken over after its
 * lease), and at least JetStream's default of two minutes.
 */
export async function openBakeryJetStream(
  config: Config,
  log: Logger,
  stream = config.NATS_STREAM,
): Promise<JetStream> {
  return await openJetStream(config.NATS_URL, {
    names: new StreamNames(stream),
    subscribers: SUBSCRIBERS,
    duplicateWindowMs: Math.max(
      120_000,
      2 * (TUNING.relayLeaseMs + config.RELAY_RETRY_MS),
    ),
    ackWaitMs: consumerLease(config),
    replicas: config.NATS_REPLICAS,
    // At least the replay horizon (promises.ts): a redrive over
    // JetStream gives the stream's copy again.
    maxAgeMs: natsMaxAgeDays(config) * 86_400_000,
  }, log);
}

/**
 * The bakery's transport (lib/carriers/carrier.ts), as QUEUE says: the
 * PostgreSQL queue, or JetStream on the stream NATS_STREAM with
 * PostgreSQL's ledger beside it. With `relay`, the relay's moves and
 * publishes get connections of their own on `deps.url`; the transport
 * closes whatever it opened.
 */
export async function openBakeryCarrier(
  deps: BakeryDeps & { url: string },
  options: { relay: boolean },
): Promise<Carrier> {
  // Renewable: two connections are few enough that a server restart can
  // leave both held for good (lib/db/reserved.ts).
  const relaySql = options.relay
    ? renewablePool(() =>
      connect(deps.url, {
        max: RELAY_CONNECTIONS,
        applicationName: "bakery-relay",
      }), deps.log)
    : undefined;
  const sql = relaySql ?? deps.sql;
  if (deps.config.QUEUE !== "jetstream") {
    return postgresCarrier({
      sql,
      routing: ROUTING,
      slots: RELAY_CONNECTIONS,
      close: async () => await relaySql?.end({ timeout: 5 }),
    });
  }
  let stream: JetStream;
  try {
    stream = await openBakeryJetStream(deps.config, deps.log, deps.natsStream);
  } catch (error) {
    await relaySql?.end({ timeout: 5 });
    throw error;
  }
  return jetStreamCarrier({
    stream,
    ledger: new Ledger(sql, ROUTING),
    routing: ROUTING,
    ackWaitMs: consumerLease(deps.config),
    close: async () => {
      await relaySql?.end({ timeout: 5 });
      await stream.close();
    },
  });
}

/** What the bakery's workers are told as they work (live pages, metrics). */
export type BakeryExtra =
  & Pick<MessagingOptions, "roles">
  & MessagingOptions["hooks"]
  & Pick<MessagingOptions, "owner">
  & { consumers?: number; senders?: MessagingOptions["senders"] };

/**
 * The bakery's messaging for one database (or, in split mode, one
 * sender's): the relay for orders and billing, the consumers, the six
 * receivers in process, on the carrier QUEUE names. Nothing runs until
 * `start()`; a web process without workers keeps it unstarted and asks it
 * to redrive.
 */
export function createBakeryMessaging(
  deps: BakeryDeps & { url: string },
  extra: BakeryExtra = {},
): Messaging {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const relay = extra.roles?.relay ?? true;
  const receiverSql = deps.databases?.main ?? deps.sql;
  const { config } = deps;
  return createMessaging({
    ledger: { sql: deps.sql, url: deps.url },
    routing: ROUTING,
    senders: extra.senders ?? SENDERS,
    subscribers: bakerySubscribers(faults),
    carrier: {
      name: config.QUEUE,
      // JetStream keeps a copy of each message: a redrive gives it again.
      redriveRepublishes: config.QUEUE === "jetstream",
      open: () => openBakeryCarrier(deps, { relay }),
    },
    // In split mode the receivers apply through the console's pool, which
    // routes each to its own database; so do their previews.
    dispatcher: bakeryDispatcher({ ...deps, sql: receiverSql, faults }),
    receivers: previewReceivers({ ...deps, sql: receiverSql }),
    log: deps.log,
    faults,
    pauses: pgPauses(deps.sql),
    roles: extra.roles,
    // Each subscriber's inbox is the table `inbox` in its own schema; the
    // read-only console role may read them all.
    audit: {
      reader: "console",
      subscribers: SUBSCRIBERS,
      inboxOf: (subscriber) => `${subscriber}.inbox`,
      inboxDatabase: deps.databases &&
        ((subscriber) => deps.databases!.pools.get(subscriber)),
    },
    tuning: {
      pollMs: config.POLL_INTERVAL_MS,
      relayRetryMs: config.RELAY_RETRY_MS,
      retryDelaysMs: config.RETRY_DELAYS_MS,
      timeoutMs: config.DELIVERY_TIMEOUT_MS,
      consumerLeaseMs: consumerLease(config),
      beatMs: config.WORKER_BEAT_MS,
      ...(extra.consumers ? { consumers: extra.consumers } : {}),
    },
    version: config.APP_VERSION,
    owner: extra.owner,
    hooks: {
      onTouched: extra.onTouched,
      observeLag: extra.observeLag,
      observeDelivered: extra.observeDelivered,
    },
  });
}

/** {@link createBakeryMessaging}, started. */
export async function startBakeryMessaging(
  deps: BakeryDeps & { url: string },
  extra: BakeryExtra = {},
): Promise<Messaging> {
  const messaging = createBakeryMessaging(deps, extra);
  await messaging.start();
  return messaging;
}

/** Split mode's JetStream stream of one sender. */
export function splitStream(stream: string, sender: string): string {
  return `${stream}_${sender}`;
}

/**
 * Split mode's messaging (services/databases.ts): for each sender, a relay
 * and consumers of its own in its own database, on a queue there (over
 * JetStream: a stream of its own, and the ledger there). The relay's move
 * stays one transaction in that database; the consumers' receivers apply in
 * theirs (the console's pool routes them), and the closure audit reads each
 * inbox where it is. The fault switches are the console's, in its
 * database. One Messaging stands for them all.
 */
export function createSplitMessaging(
  deps: BakeryDeps,
  databases: ServiceDatabases,
  extra: BakeryExtra = {},
): Messaging {
  const faults = deps.faults ?? pgFaults(deps.sql);
  // One process, one worker: every sender's messaging leases and beats
  // under the same id, so the Workers page lists the process once.
  const owner = extra.owner ?? newOwner();
  const bySender = new Map(SENDERS.map((sender) => [
    sender as string,
    createBakeryMessaging({
      ...deps,
      faults,
      sql: databases.pools.get(sender)!,
      url: databases.urls.get(sender)!,
      databases,
      // Over JetStream, a stream per sender beside its ledger: a consumer
      // then finishes each delivery in the one database that holds it.
      natsStream: splitStream(deps.config.NATS_STREAM, sender),
    }, { ...extra, owner, senders: [sender] }),
  ]));
  const all = [...bySender.values()];
  const [first] = all;
  const started: Messaging[] = [];
  const stopAll = async () => {
    for (const m of started.splice(0).reverse()) await m.stop();
  };
  return {
    get owner() {
      return first.owner;
    },
    start: async () => {
      try {
        for (const m of all) {
          await m.start();
          started.push(m);
        }
      } catch (error) {
        await stopAll();
        throw error;
      }
    },
    stop: stopAll,
    wake: (service) => bySender.get(service)?.wake(service) ?? false,
    wakeConsumers: () => all.forEach((m) => m.wakeConsumers()),
    // The broker is down where any sender's connection is.
    health: () =>
      all.map((m) => m.health()).find((h) => h.broker === "down") ??
        first.health(),
    deadLetters: first.deadLetters,
    outbox: first.outbox,
    forget: async (tenantIds) => {
      for (const m of all) await m.forget(tenantIds);
    },
  };
}

/** {@link createSplitMessaging}, started. */
export async function startSplitMessaging(
  deps: BakeryDeps,
  databases: ServiceDatabases,
  extra: BakeryExtra = {},
): Promise<Messaging> {
  const messaging = createSplitMessaging(deps, databases, extra);
  await messaging.start();
  return messaging;
}

/**
 * An outbox's commit wakes its sender's relay (lib/outbox/wake.ts), through
 * the pool it committed on: `sql`, or in split mode each sender's own.
 * Returns what waits for the NOTIFYs still under way.
 */
export function wakeRelaysAfterCommit(
  sql: Sql,
  databases: ServiceDatabases | undefined,
  local: LocalRelays | undefined,
  log: Logger,
): { flush(): Promise<void> } {
  const pools = databases
    ? databases.senders.map((s) => databases.pools.get(s)!)
    : [sql];
  const wakers = pools.map((pool) => {
    const waker = coalescingWaker(pool, {
      local,
      onError: (error) => log.warn("outbox_wake_failed", { error }),
    });
    setOutboxWaker(pool, waker.wake);
    return waker;
  });
  return {
    flush: async () => {
      await Promise.all(wakers.map((w) => w.flush()));
    },
  };
}
