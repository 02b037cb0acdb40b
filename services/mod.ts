/**
 * The bakery's messaging, assembled: the receivers as in-process handlers,
 * the subscribers' addresses, and the relay and consumers for the two
 * senders. Everything generic comes from lib/.
 */
import { connect, type Sql } from "../lib/db/connect.ts";
import { renewablePool } from "../lib/db/reserved.ts";
import type { Logger } from "../lib/log/mod.ts";
import type { Config } from "../config.ts";
import {
  type FaultReader,
  faultyReceiver,
  pgFaults,
} from "../lib/faults/mod.ts";
import {
  type Apply,
  inboxBatchHandler,
  inboxHandler,
} from "../lib/inbox/mod.ts";
import {
  consumerLeaseMs,
  Dispatcher,
  type Subscriber,
} from "../lib/delivery/mod.ts";
import { Ledger, pgPauses } from "../lib/ledger/mod.ts";
import { type Carrier, postgresCarrier } from "../lib/carriers/mod.ts";
import {
  type BrokerCluster,
  type JetStream,
  jetStreamCarrier,
  openJetStream,
  StreamNames,
} from "../lib/carriers/jetstream/mod.ts";
import {
  type Messaging,
  type MessagingOptions,
  startMessaging,
} from "../lib/workers/mod.ts";
import {
  LABELS,
  ROUTING,
  SENDERS,
  type SubscriberName,
  SUBSCRIBERS,
} from "./routing.ts";
import { applyToKitchen } from "./receivers/kitchen.ts";
import { applyToSchedule } from "./receivers/schedule.ts";
import { applyToDispatch } from "./receivers/dispatch.ts";
import { applyToCrm, applyToCustomers } from "./receivers/history.ts";
import { applyToReceipts } from "./receivers/receipts.ts";
import { applyToOrders } from "./orders/payments.ts";
import type { ServiceDatabases } from "./databases.ts";
import {
  coalescingWaker,
  type LocalRelays,
  setOutboxWaker,
} from "../lib/outbox/mod.ts";

/** Receivers live in this process, reached without a socket. */
export const INTERNAL_ORIGIN = "http://bakery.internal";

const APPLY: Record<SubscriberName, Apply> = {
  kitchen: applyToKitchen,
  schedule: applyToSchedule,
  dispatch: applyToDispatch,
  crm: applyToCrm,
  customers: applyToCustomers,
  receipts: applyToReceipts,
  orders: applyToOrders,
};

export const BAKERY_SUBSCRIBERS: Record<string, Subscriber> = Object
  .fromEntries(
    SUBSCRIBERS.map((name) => [name, {
      url: `${INTERNAL_ORIGIN}/receivers/${name}`,
      batchUrl: `${INTERNAL_ORIGIN}/receivers/${name}/batch`,
      label: LABELS[name],
    }]),
  );

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

/** A dispatcher that serves every receiver in process. */
export function bakeryDispatcher(deps: BakeryDeps): Dispatcher {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const handlers = new Map<string, (request: Request) => Promise<Response>>();
  for (const name of SUBSCRIBERS) {
    const receiver = {
      sql: deps.sql,
      service: name,
      label: LABELS[name],
      apply: APPLY[name],
      replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS,
      log: deps.log,
      // A receiver's fault switches wrap its handlers; those of the relay
      // and the consumers wrap the queue and the dispatcher, in
      // lib/workers (startMessaging).
      wrap: faultyReceiver(faults, {
        label: LABELS[name],
        refuses: `${name}Refuses`,
        slow: `${name}Slow`,
        slowMs: deps.config.DELIVERY_TIMEOUT_MS + 1000,
      }),
    };
    handlers.set(name, inboxHandler(receiver));
    handlers.set(`${name}/batch`, inboxBatchHandler(receiver));
  }
  return new Dispatcher().register(INTERNAL_ORIGIN, (request) => {
    const name = new URL(request.url).pathname.replace(/^\/receivers\//, "");
    const handler = handlers.get(name);
    return handler
      ? handler(request)
      : Response.json({ error: `no receiver ${name}` }, { status: 404 });
  });
}

/**
 * The relay's moves have connections of their own, one per move slot
 * (PgMove's `slots`, 2 by default). On the process's pool they went
 * round all its connections (postgres.js lends the one idle the longest),
 * and each connection planned the move and filled its caches for itself, again
 * after every 30 s idle; a move on a connection it had not run on before took
 * half as long again. Two connections that do nothing else stay ready, and a
 * move never waits for a connection behind the receivers. What that was
 * worth, measured: bench/HISTORY.md, "the relay's own connections".
 */
export const RELAY_CONNECTIONS = 2;

/** The relay's lease on outbox rows it claims the long way (lib/relay). */
const RELAY_LEASE_MS = 30_000;

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
      2 * (RELAY_LEASE_MS + config.RELAY_RETRY_MS),
    ),
    ackWaitMs: consumerLeaseMs({ timeoutMs: config.DELIVERY_TIMEOUT_MS }),
    replicas: config.NATS_REPLICAS,
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
    ackWaitMs: consumerLeaseMs({ timeoutMs: deps.config.DELIVERY_TIMEOUT_MS }),
    close: async () => {
      await relaySql?.end({ timeout: 5 });
      await stream.close();
    },
  });
}

/**
 * Starts the relay for orders and billing and the consumers, on the
 * bakery's transport ({@link openBakeryCarrier}), which stop() closes.
 * `Messaging.brokerUp` says whether the broker answers, where there is one.
 */
export async function startBakeryMessaging(
  deps: BakeryDeps & { url: string },
  extra:
    & Pick<
      MessagingOptions,
      | "roles"
      | "onTouched"
      | "observeLag"
      | "observeDelivered"
      | "consumers"
    >
    & { senders?: MessagingOptions["senders"] } = {},
): Promise<
  Messaging & {
    transport: Carrier;
    brokerUp?: () => boolean;
    brokerCluster?: () => BrokerCluster;
  }
> {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const transport = await openBakeryCarrier(deps, {
    relay: extra.roles?.relay ?? true,
  });
  let messaging: Messaging;
  try {
    messaging = await startMessaging({
      url: deps.url,
      sql: deps.sql,
      log: deps.log,
      faults,
      pauses: pgPauses(deps.sql),
      senders: SENDERS,
      transport,
      relayLeaseMs: RELAY_LEASE_MS,
      // In split mode the receivers apply through the console's pool, which
      // routes each to its own database.
      dispatcher: bakeryDispatcher({
        ...deps,
        sql: deps.databases?.main ?? deps.sql,
        faults,
      }),
      subscribers: BAKERY_SUBSCRIBERS,
      pollMs: deps.config.POLL_INTERVAL_MS,
      relayRetryMs: deps.config.RELAY_RETRY_MS,
      retryDelaysMs: deps.config.RETRY_DELAYS_MS,
      timeoutMs: deps.config.DELIVERY_TIMEOUT_MS,
      // Each subscriber's inbox is the table `inbox` in its own schema; the
      // read-only console role may read them all.
      audit: {
        reader: "console",
        subscribers: SUBSCRIBERS,
        inboxOf: (subscriber) => `${subscriber}.inbox`,
        inboxDatabase: deps.databases &&
          ((subscriber) => deps.databases!.pools.get(subscriber)),
      },
      ...extra,
    });
  } catch (error) {
    await transport.close();
    throw error;
  }
  return {
    ...messaging,
    transport,
    brokerUp: transport.up && (() => transport.up!()),
    brokerCluster: transport.cluster && (() => transport.cluster!()),
    stop: async () => {
      await messaging.stop();
      await transport.close();
    },
  };
}

/** Split mode's JetStream stream of one sender. */
export function splitStream(stream: string, sender: string): string {
  return `${stream}_${sender}`;
}

/** What {@link startBakeryMessaging} returns. */
export type BakeryMessaging = Awaited<ReturnType<typeof startBakeryMessaging>>;

/**
 * Split mode's workers (services/databases.ts): for each sender, a relay
 * and consumers of its own in its own database, on a queue there (over
 * JetStream: a stream of its own, and the ledger there). The
 * relay's move stays one transaction in that database; the consumers'
 * receivers apply in theirs (the console's pool routes them), and the
 * closure audit reads each inbox where it is. The fault switches are the
 * console's, in its database.
 */
export async function startSplitMessaging(
  deps: BakeryDeps,
  databases: ServiceDatabases,
  extra: Parameters<typeof startBakeryMessaging>[1] = {},
): Promise<BakeryMessaging> {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const started: BakeryMessaging[] = [];
  const stopAll = async () => {
    for (const m of started.splice(0).reverse()) await m.stop();
  };
  try {
    for (const sender of SENDERS) {
      const sql = databases.pools.get(sender)!;
      const messaging = await startBakeryMessaging({
        ...deps,
        faults,
        sql,
        url: databases.urls.get(sender)!,
        databases,
        // Over JetStream, a stream per sender beside its ledger: a consumer
        // then finishes each delivery in the one database that holds it.
        natsStream: splitStream(deps.config.NATS_STREAM, sender),
      }, {
        ...extra,
        senders: [sender],
      });
      started.push(messaging);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  const bySender = new Map(SENDERS.map((s, i) => [s as string, started[i]]));
  const [first] = started;
  return {
    ...first,
    wakeRelay: (service) => bySender.get(service)?.wakeRelay(service) ?? false,
    wakeConsumers: () => started.forEach((m) => m.wakeConsumers()),
    forget: async (tenantIds) => {
      for (const m of started) await m.forget(tenantIds);
    },
    stop: stopAll,
  };
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
