/**
 * The bakery's messaging, assembled: the receivers as in-process handlers,
 * the subscribers' addresses, and the relay and consumers for the two
 * senders. Everything generic comes from lib/.
 */
import type { Sql } from "../lib/db/connect.ts";
import type { Logger } from "../lib/log/mod.ts";
import type { Config } from "../config.ts";
import { type FaultReader, pgFaults } from "../lib/faults/mod.ts";
import { type Apply, inboxHandler } from "../lib/inbox/mod.ts";
import { Dispatcher, PgQueue, type Subscriber } from "../lib/queue/mod.ts";
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
      label: LABELS[name],
    }]),
  );

export interface BakeryDeps {
  sql: Sql;
  log: Logger;
  config: Config;
  faults?: FaultReader;
}

/** A dispatcher that serves every receiver in process. */
export function bakeryDispatcher(deps: BakeryDeps): Dispatcher {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const handlers = new Map(SUBSCRIBERS.map((name) => [
    name as string,
    inboxHandler({
      sql: deps.sql,
      service: name,
      label: LABELS[name],
      apply: APPLY[name],
      replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS,
      faults,
      log: deps.log,
      refusesFault: `${name}Refuses`,
      slowFault: `${name}Slow`,
      slowMs: deps.config.DELIVERY_TIMEOUT_MS + 1000,
    }),
  ]));
  return new Dispatcher().register(INTERNAL_ORIGIN, (request) => {
    const name = new URL(request.url).pathname.replace(/^\/receivers\//, "");
    const handler = handlers.get(name);
    return handler
      ? handler(request)
      : Response.json({ error: `no receiver ${name}` }, { status: 404 });
  });
}

/** Starts the relay for orders and billing and the consumers. */
export function startBakeryMessaging(
  deps: BakeryDeps & { url: string },
  extra: Pick<
    MessagingOptions,
    "roles" | "onTouched" | "observeLag" | "observeDelivered" | "consumers"
  > = {},
): Promise<Messaging> {
  const faults = deps.faults ?? pgFaults(deps.sql);
  return startMessaging({
    url: deps.url,
    sql: deps.sql,
    log: deps.log,
    faults,
    senders: SENDERS,
    queue: new PgQueue(deps.sql, ROUTING),
    dispatcher: bakeryDispatcher({ ...deps, faults }),
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
    },
    ...extra,
  });
}
