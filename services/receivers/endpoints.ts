/**
 * The receivers' endpoints. Each receiver is a service with an inbox,
 * served in this process at `http://bakery.internal/receivers/<name>` (one
 * message) and `.../<name>/batch`, which no socket listens on: the
 * consumers' dispatcher (lib/delivery/dispatcher.ts) hands those requests
 * to the routes below without leaving the process. Across processes a
 * subscriber's address would be a real one, and the same handlers would
 * stand behind a router that listens.
 */
import { Hono } from "hono";
import type { Sql } from "../../lib/db/connect.ts";
import type { Logger } from "../../lib/log/mod.ts";
import type { Config } from "../../config.ts";
import {
  type FaultReader,
  faultyReceiver,
  pgFaults,
} from "../../lib/faults/mod.ts";
import {
  type Apply,
  type ApplyMany,
  inboxBatchHandler,
  inboxHandler,
} from "../../lib/inbox/mod.ts";
import { Dispatcher, type Subscriber } from "../../lib/delivery/mod.ts";
import type { PreviewReceiver } from "../../lib/mod.ts";
import { LABELS, type SubscriberName, SUBSCRIBERS } from "../routing.ts";
import { applyManyToKitchen, applyToKitchen } from "./kitchen.ts";
import { applyManyToSchedule, applyToSchedule } from "./schedule.ts";
import { applyManyToDispatch, applyToDispatch } from "./dispatch.ts";
import {
  applyManyToCrm,
  applyManyToCustomers,
  applyToCrm,
  applyToCustomers,
} from "./history.ts";
import { applyManyToReceipts, applyToReceipts } from "./receipts.ts";
import { applyToOrders } from "../orders/payments.ts";

/** Receivers live in this process, reached without a socket. */
export const INTERNAL_ORIGIN = "http://bakery.internal";

/** What each receiver does with a message, in its inbox's transaction. */
const APPLY: Record<SubscriberName, Apply> = {
  kitchen: applyToKitchen,
  schedule: applyToSchedule,
  dispatch: applyToDispatch,
  crm: applyToCrm,
  customers: applyToCustomers,
  receipts: applyToReceipts,
  orders: applyToOrders,
};

/**
 * The receivers that also take a batch as one set (lib/inbox/
 * apply_many.ts); orders takes one payment at a time.
 */
const APPLY_MANY: Partial<Record<SubscriberName, ApplyMany>> = {
  kitchen: applyManyToKitchen,
  schedule: applyManyToSchedule,
  dispatch: applyManyToDispatch,
  crm: applyManyToCrm,
  customers: applyManyToCustomers,
  receipts: applyManyToReceipts,
};

/** Where the consumers reach each subscriber. */
export const BAKERY_SUBSCRIBERS: Record<string, Subscriber> = Object
  .fromEntries(
    SUBSCRIBERS.map((name) => [name, {
      url: `${INTERNAL_ORIGIN}/receivers/${name}`,
      batchUrl: `${INTERNAL_ORIGIN}/receivers/${name}/batch`,
      label: LABELS[name],
    }]),
  );

/**
 * The switch by which a sandbox has the kitchen keep each order's sequence
 * (a held delivery waits behind its order's dead one; lib/ledger/states.ts).
 */
export const KITCHEN_KEEPS_ORDER = "kitchenKeepsOrder";

/**
 * {@link BAKERY_SUBSCRIBERS}, with the kitchen keeping each order's
 * sequence in the sandboxes that turned {@link KITCHEN_KEEPS_ORDER} on.
 */
export function bakerySubscribers(
  faults: FaultReader,
): Record<string, Subscriber> {
  return {
    ...BAKERY_SUBSCRIBERS,
    kitchen: {
      ...BAKERY_SUBSCRIBERS.kitchen,
      keepsOrder: async (tenantId) =>
        (await faults([tenantId])).get(tenantId)?.has(KITCHEN_KEEPS_ORDER) ??
          false,
    },
  };
}

/** What the receivers' routes are built with. */
export interface ReceiverDeps {
  /** The pool each receiver's transaction runs on (split mode: routed). */
  sql: Sql;
  log: Logger;
  config: Config;
  faults?: FaultReader;
}

/**
 * The receivers' routes: `POST /receivers/:name` and
 * `POST /receivers/:name/batch`, each receiver's inbox handlers wrapped
 * in its fault switches. Those of the relay and the consumers wrap the
 * carrier and the dispatcher instead, in lib/workers.
 */
export function receiverRoutes(deps: ReceiverDeps): Hono {
  const faults = deps.faults ?? pgFaults(deps.sql);
  const app = new Hono();
  for (const name of SUBSCRIBERS) {
    const receiver = {
      sql: deps.sql,
      service: name,
      label: LABELS[name],
      apply: APPLY[name],
      applyMany: APPLY_MANY[name],
      replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS,
      log: deps.log,
      wrap: faultyReceiver(faults, {
        label: LABELS[name],
        refuses: `${name}Refuses`,
        slow: `${name}Slow`,
        slowMs: deps.config.DELIVERY_TIMEOUT_MS + 1000,
        skipsInbox: `${name}SkipsInbox`,
      }),
    };
    const one = inboxHandler(receiver);
    const batch = inboxBatchHandler(receiver);
    app.post(`/receivers/${name}`, (c) => one(c.req.raw));
    app.post(`/receivers/${name}/batch`, (c) => batch(c.req.raw));
  }
  app.notFound((c) =>
    c.json({
      error: `no receiver ${c.req.path.replace(/^\/receivers\//, "")}`,
    }, 404)
  );
  return app;
}

/**
 * The receivers as a redrive's preview runs them (lib/redrive_preview.ts):
 * the same apply as their routes, without the fault switches, which are
 * a receiver's weather, not its answer.
 */
export function previewReceivers(
  deps: ReceiverDeps,
): Record<string, PreviewReceiver> {
  return Object.fromEntries(SUBSCRIBERS.map((name) => [name, {
    sql: deps.sql,
    apply: APPLY[name],
    replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS,
  }]));
}

/** A dispatcher that serves every receiver in process. */
export function bakeryDispatcher(deps: ReceiverDeps): Dispatcher {
  const routes = receiverRoutes(deps);
  return new Dispatcher().register(
    INTERNAL_ORIGIN,
    (request) => Promise.resolve(routes.fetch(request)),
  );
}
