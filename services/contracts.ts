/**
 * The wire contracts of the JSON answers outside the console: the
 * storefront (menu, orders, payments), the session, the labs, How it's
 * built, the health probe and the Stripe webhook. services/console/
 * contracts.ts holds the console's. Each schema is the shape a route
 * answers with today; routes/api/openapi.ts puts them in the OpenAPI
 * document, and the tests check real answers against that document, so a
 * field added or renamed here and not there (or the reverse) fails a test.
 *
 * Every object is strict, as the console's are: a field that is not in the
 * contract is an error, as a missing one is.
 */
import { z } from "zod";
import { TRY_IT_STEPS } from "./how/try_it.ts";
import { CRASHES } from "./labs/queue_lab.ts";

/** A time as `Date.toISOString()` writes it. */
const time = z.iso.datetime();
const count = z.number().int().nonnegative();
const uuid = z.uuid();
const cents = z.number().int().nonnegative();

// --- Session -------------------------------------------------------------

/** `POST /api/session`: 201, the signed-in sandbox. */
export const signedInSchema = z.strictObject({
  sandboxId: uuid,
  name: z.string(),
});

/** `GET /api/session`; `name` is null for a guest. */
export const sessionSchema = z.strictObject({
  sandboxId: uuid,
  name: z.string().nullable(),
  /** Send it as `X-CSRF-Token` with a request that changes state. */
  csrfToken: z.string(),
});

// --- Storefront ----------------------------------------------------------

/** `GET /api/menu`. */
export const menuSchema = z.strictObject({
  items: z.array(z.strictObject({
    sku: z.string(),
    name: z.string(),
    priceCents: cents,
  })),
});

/** `POST /api/orders`: 201 for a new order, 200 for a known key. */
export const placedOrderSchema = z.strictObject({
  orderId: uuid,
  state: z.string(),
  totalCents: cents,
});

/** `POST /api/orders/:orderId/pay`: 202, the payment under way. */
export const payAnswerSchema = z.strictObject({
  paymentId: z.string(),
  /** With real Stripe keys: the Checkout page to send the visitor to. */
  checkoutUrl: z.url().optional(),
});

/** `POST /api/orders/:orderId/cancel`: 202; `changed` false on a repeat. */
export const cancelAnswerSchema = z.strictObject({
  state: z.literal("cancelled"),
  changed: z.boolean(),
});

/** `GET /api/orders/:orderId`: the order's whole story (services/timeline.ts). */
export const orderViewSchema = z.strictObject({
  orderId: uuid,
  state: z.string(),
  version: z.number().int().positive(),
  totalCents: cents,
  customer: z.strictObject({ name: z.string(), email: z.string() }),
  fulfilment: z.enum(["pickup", "delivery"]),
  day: z.iso.date(),
  paymentRef: z.string().nullable(),
  createdAt: time,
  lines: z.array(z.strictObject({
    sku: z.string(),
    name: z.string(),
    qty: z.number().int().positive(),
    unitCents: cents,
  })),
  events: z.array(z.strictObject({
    type: z.string(),
    version: z.number().int().positive(),
    at: time,
    messageId: uuid.nullable(),
  })),
  messages: z.array(z.strictObject({
    messageId: uuid,
    service: z.string(),
    eventType: z.string(),
    state: z.string(),
    attempts: count,
    lastError: z.string().nullable(),
    createdAt: time,
    publishedAt: time.nullable(),
    /** The OpenTelemetry trace id, where tracing was on (OTEL_DENO). */
    traceId: z.string().regex(/^[0-9a-f]{32}$/).nullable(),
  })),
  deliveries: z.array(z.strictObject({
    id: z.number().int().positive(),
    messageId: uuid,
    eventType: z.string(),
    subscriber: z.string(),
    state: z.string(),
    attempts: count,
    lastStatus: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: time.nullable(),
    /** What the receiver's inbox holds for it, once it took it. */
    accepted: z.strictObject({
      status: z.number().int(),
      at: time,
      outcome: z.unknown(),
    }).nullable(),
  })),
  receipt: z.strictObject({
    number: z.string(),
    totalCents: cents,
    paymentRef: z.string(),
    issuedAt: time,
  }).nullable(),
  kitchenCard: z.strictObject({
    state: z.string(),
    version: z.number().int().positive(),
  }).nullable(),
});

/** `POST /webhooks/stripe`: 200, what became of the event. */
export const webhookAnswerSchema = z.strictObject({
  received: z.literal(true),
  /** The event id was recorded before: nothing changed. */
  duplicate: z.boolean(),
  outcome: z.string(),
  status: z.literal(200),
});

// --- Operations ----------------------------------------------------------

/** `GET /health`: 200 when all is up, 503 (the same shape) when not. */
export const healthSchema = z.strictObject({
  status: z.enum(["ok", "starting", "degraded"]),
  database: z.enum(["up", "down"]),
  queue: z.enum(["postgres", "jetstream"]),
  /** With QUEUE=jetstream and the workers in this process. */
  broker: z.enum(["up", "down"]).optional(),
  /** The same: the NATS cluster as this process's client sees it. */
  cluster: z.strictObject({
    server: z.string(),
    name: z.string().nullable(),
    servers: z.array(z.string()),
    replicas: z.number().int().min(1),
  }).optional(),
});

// --- How it's built ------------------------------------------------------

/** `GET /api/how-it-works/costs`: what a paid order costs in rows and bytes. */
export const costsSchema = z.strictObject({
  paidOrders: count,
  perPaidOrder: z.strictObject({
    rowsWritten: z.record(z.string(), z.number().nonnegative().nullable()),
    bytes: z.strictObject({
      outbox: z.number().nonnegative().nullable(),
      queue: z.number().nonnegative().nullable(),
      inbox: z.number().nonnegative().nullable(),
    }),
    messages: z.number().nonnegative().nullable(),
    deliveries: z.number().nonnegative().nullable(),
    attempts: z.number().nonnegative().nullable(),
  }),
  latencyMs: z.strictObject({
    p50: z.number().nonnegative().nullable(),
    p95: z.number().nonnegative().nullable(),
  }),
});

/** `GET /api/how-it-works/try-it`: the walkthrough's checklist. */
export const tryItSchema = z.strictObject({
  steps: z.array(z.strictObject({
    step: z.enum(TRY_IT_STEPS),
    done: z.boolean(),
    href: z.string(),
  })),
  orderId: uuid.nullable(),
});

const writeFigures = z.strictObject({
  ordersPerSecond: z.number().nonnegative().nullable(),
  cpuUsPerOrder: z.number().nonnegative().nullable(),
});

/** `GET /api/how-it-works`: the page; `sandbox` null without a session. */
export const howItWorksSchema = z.strictObject({
  paidReceivers: z.array(z.strictObject({
    name: z.string(),
    label: z.string(),
  })),
  routing: z.record(z.string(), z.array(z.string())),
  senders: z.array(z.string()),
  settings: z.strictObject({
    retryDelaysMs: z.array(count),
    deliveryTimeoutMs: count,
    relayRetryMs: count,
    guardLimitPerDay: count,
    replayHorizonDays: count,
    pollIntervalMs: count,
    queue: z.enum(["postgres", "jetstream"]),
  }),
  sandbox: z.strictObject({
    lastOrder: z.strictObject({
      orderId: uuid,
      state: z.string(),
      outbox: z.array(z.strictObject({
        service: z.string(),
        messageId: uuid,
        eventType: z.string(),
        state: z.string(),
        attempts: count,
        lastError: z.string().nullable(),
        createdAt: time,
        publishedAt: time.nullable(),
        gapMs: z.number().nullable(),
      })),
    }).nullable(),
    loopGuard: z.strictObject({
      rearmsToday: z.record(z.string(), count),
      total: count,
      parked: count,
      retrying: count,
    }),
    inboxes: z.array(z.strictObject({
      receiver: z.string(),
      messages: count,
      repeats: count,
    })),
    repeatsTotal: count,
    deliveries: z.strictObject({
      dead: count,
      refused: count,
      redrives: count,
    }),
    costs: costsSchema,
    tryIt: tryItSchema,
  }).nullable(),
  benchmark: z.strictObject({
    commit: z.string().nullable(),
    finishedAt: z.string().nullable(),
    withOutbox: writeFigures,
    withoutOutbox: writeFigures,
  }).nullable(),
});

// --- Labs ----------------------------------------------------------------

const ledgerFigures = {
  sender: z.strictObject({ orders: count, pending: count }),
  receiver: z.strictObject({ inbox: count, jobs: count, refusals: count }),
};

/** `POST /api/labs/ledger/:scenario`: the rows' figures after the run. */
export const ledgerRunSchema = z.strictObject({
  scenario: z.string(),
  ...ledgerFigures,
  explanation: z.string(),
});

/** `GET /api/labs/ledger`: the scenarios and what the last run left. */
export const ledgerSchema = z.strictObject({
  scenarios: z.array(z.strictObject({
    name: z.string(),
    title: z.string(),
    broken: z.boolean(),
  })),
  ...ledgerFigures,
  rows: z.strictObject({
    orders: z.array(z.strictObject({
      orderId: z.string(),
      state: z.string(),
      version: z.number().int(),
    })),
    outbox: z.array(z.strictObject({
      label: z.string().nullable(),
      type: z.string(),
      state: z.string(),
      attempts: count,
      lastError: z.string().nullable(),
    })),
    inbox: z.array(z.strictObject({
      messageId: z.string(),
      type: z.string(),
      status: z.number().int(),
      outcome: z.string().nullable(),
    })),
    jobs: z.array(z.strictObject({
      orderId: z.string(),
      label: z.string(),
      state: z.string(),
      version: z.number().int(),
    })),
    refusals: z.array(z.strictObject({
      messageId: z.string(),
      type: z.string(),
      reason: z.string(),
    })),
  }),
});

/** The Queue Lab's figures and each delivery as a worker saw it. */
const queueLabResult = {
  tickets: count,
  duplicates: count,
  deadLetters: count,
  deliveries: count,
  timeline: z.array(z.strictObject({
    worker: z.number().int(),
    order: z.number().int(),
    attempt: z.number().int(),
    startMs: z.number().nonnegative(),
    endMs: z.number().nonnegative(),
    printed: z.boolean(),
    duplicate: z.boolean(),
    remembered: z.boolean(),
    outcome: z.enum(["acked", "crashed", "retry", "dead"]),
    error: z.string().nullable(),
  })),
};

/** `POST /api/labs/queue`: the run. */
export const queueLabRunSchema = z.strictObject(queueLabResult);

/** `GET /api/labs/queue`: the last run with its settings, or null. */
export const queueLabLastSchema = z.strictObject({
  run: z.strictObject({
    settings: z.strictObject({
      orders: z.number().int(),
      workers: z.number().int(),
      crash: z.enum(CRASHES).nullable(),
      poisonOrders: z.number().int(),
      receiverRemembers: z.boolean(),
    }),
    ranAt: time,
    ...queueLabResult,
  }).nullable(),
});
