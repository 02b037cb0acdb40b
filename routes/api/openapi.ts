/**
 * The bakery's OpenAPI 3.1 document, served at `GET /api/openapi.json`: every
 * JSON route the app registers, with the zod schemas its handler validates
 * requests with (exported by routes/api/*.ts) and the wire contracts its
 * answers keep (services/console/contracts.ts, services/contracts.ts). The
 * errors each route can give are listed with the one error shape of the
 * edge. tests/openapi_test.ts checks that the document is valid OpenAPI, and
 * that every route of the app is in it; tests that pass real answers
 * through tests/_openapi.ts check those answers against it.
 */
import { z } from "zod";
import {
  type Answer,
  named,
  openApiDocument,
  type Operation,
} from "../../kit/http/openapi.ts";
import { stripeEventSchema } from "../../services/billing/payments.ts";
import { placeOrderSchema } from "../../services/orders/schema.ts";
import { queueLabSchema } from "../../services/labs/queue_lab.ts";
import { actionsQuerySchema } from "../../services/console/actions.ts";
import * as contracts from "../../services/console/contracts.ts";
import * as wire from "../../services/contracts.ts";
import { signInSchema } from "./session.ts";
import { paySchema } from "./orders.ts";
import { eventId } from "./checkout_events.ts";
import {
  bulkRefuseSchema,
  bulkSchema,
  closureRowsQuery,
  deadLetterQuery,
  deliveriesQuery,
  faultsSchema,
  forceSchema,
  pauseSchema,
  reasonSchema,
  redriveOutcomeQuery,
  releaseSchema,
  searchQuery,
  supersedeSchema,
  violationsQuery,
} from "./console.ts";

/** The edge's one error shape (kit/http/errors.ts). */
export const errorSchema = z.strictObject({
  error: z.string(),
  /**
   * Every field that was wrong, by its dotted path (`items.0.qty`); empty
   * when no field is to blame. Absent on a 404 of an unknown path, a 410
   * and a 503.
   */
  issues: z.array(z.strictObject({ path: z.string(), message: z.string() }))
    .optional(),
});

const ERROR = named("Error", errorSchema);

/** What each error status means here; a route may say more. */
const ERRORS: Record<number, string> = {
  400: "Bad input: `issues` names every field that is wrong",
  401: "Signed out (the console and the labs need a named session)",
  403: "A state-changing request without a same-site Origin or X-CSRF-Token",
  404: "Unknown, or of another sandbox",
  409: "In conflict with the current state",
  413: "A body over the route's limit, refused before it is read",
  410: "The sandbox is being wiped (or was): nothing of the request applied",
  415: "A body that is not Content-Type: application/json",
  422: "Refused",
  429: "Too many requests; Retry-After says when to try again",
  503: "The database is not answering; Retry-After says when to try again",
};

const RETRY_AFTER = { "Retry-After": "Seconds to wait before trying again" };

type Auth = "none" | "optional" | "session" | "operator";

interface Spec extends Omit<Operation, "tags"> {
  tag: string;
  auth?: Auth;
  /** Statuses this route gives on purpose, with what each means here. */
  errors?: Record<number, string>;
}

const SESSION = [{ session: [] }];

/**
 * One operation, with the errors every route of its kind can give: 400 for
 * what it parses, 401 behind a session and 410 in a sandbox being wiped,
 * 403 (CSRF), 413, 415 and 429 for a write, and 503 everywhere (the
 * session is read from the database).
 */
function op(key: string, spec: Spec): [string, Operation] {
  const { tag, auth = "none", errors = {}, ...rest } = spec;
  const write = !key.startsWith("GET ");
  const webhook = key.endsWith(" /webhooks/stripe");
  const derived: Record<number, string> = {};
  // A path parameter that is not of the route's kind is a 404 (no such
  // order), not a 400: only a body or a query is parsed into a 400.
  if (rest.body || rest.query) derived[400] = ERRORS[400];
  if (auth === "session" || auth === "operator") derived[401] = ERRORS[401];
  if (write && !webhook) derived[403] = ERRORS[403];
  // Whatever works in the caller's sandbox is refused once its wipe began.
  if (auth !== "none" && !key.endsWith(" /api/session")) {
    derived[410] = ERRORS[410];
  }
  if (rest.body) derived[413] = ERRORS[413];
  if (rest.body && !webhook) derived[415] = ERRORS[415];
  if (write && !webhook && key !== "DELETE /api/session") {
    derived[429] = ERRORS[429];
  }
  derived[503] = ERRORS[503];
  const answers: Record<number, Answer> = {};
  for (const [status, text] of Object.entries({ ...derived, ...errors })) {
    const n = Number(status);
    answers[n] = {
      description: text,
      body: ERROR,
      ...(n === 429 || n === 503 ? { headers: RETRY_AFTER } : {}),
    };
  }
  return [key, {
    ...(auth === "none"
      ? {}
      : { security: auth === "optional" ? [{}, ...SESSION] : SESSION }),
    ...rest,
    tags: [tag],
    // A route's own answer for a status (the health probe's 503) wins.
    answers: { ...answers, ...rest.answers },
  }];
}

const ok = (name: string, schema: z.ZodType, description = "OK") => ({
  200: { description, body: named(name, schema) },
});

const positiveId = z.coerce.number().int().positive();
const orderId = { orderId: z.uuid() };
const SET_COOKIE = {
  "Set-Cookie": "The session cookie (HttpOnly; `__Host-` prefixed over https)",
};

const STOREFRONT: [string, Operation][] = [
  op("GET /api/menu", {
    tag: "storefront",
    summary: "What is for sale, with prices in cents",
    answers: ok("Menu", wire.menuSchema),
  }),
  op("POST /api/orders", {
    tag: "storefront",
    auth: "optional",
    summary: "Place an order",
    description:
      "A caller without a session gets a guest session and sandbox. The same idempotencyKey again answers 200 with the same order.",
    body: { schema: named("PlaceOrder", placeOrderSchema) },
    answers: {
      201: {
        description: "Placed",
        body: named("PlacedOrder", wire.placedOrderSchema),
        headers: SET_COOKIE,
      },
      200: {
        description: "Placed before under this key",
        body: named("PlacedOrder", wire.placedOrderSchema),
      },
    },
    errors: {
      409: "Sold out for the day, or the key was used for another order",
    },
  }),
  op("GET /api/orders/:orderId", {
    tag: "storefront",
    auth: "session",
    summary: "An order's whole story",
    params: orderId,
    answers: ok("OrderView", wire.orderViewSchema),
    errors: { 404: "No such order in this sandbox" },
  }),
  op("POST /api/orders/:orderId/pay", {
    tag: "storefront",
    auth: "session",
    summary: "Pay an order",
    description:
      "Test mode takes Stripe's test cards (4000000000000002 is declined); the payment completes through a Stripe-signed webhook.",
    params: orderId,
    body: { schema: named("Pay", paySchema), required: false },
    answers: {
      202: {
        description: "The payment is under way",
        body: named("PayAnswer", wire.payAnswerSchema),
      },
    },
    errors: {
      404: "No such order in this sandbox",
      409: "The order is paid or cancelled",
      422: "Stripe refused the checkout",
      503: "The database or Stripe is not answering",
    },
  }),
  op("POST /api/orders/:orderId/cancel", {
    tag: "storefront",
    auth: "session",
    summary: "Cancel an order",
    params: orderId,
    answers: {
      202: {
        description: "Cancelled (again: changed is false)",
        body: named("CancelAnswer", wire.cancelAnswerSchema),
      },
    },
    errors: {
      404: "No such order in this sandbox",
      409: "Paid: it can no longer be cancelled",
    },
  }),
  op("POST /webhooks/stripe", {
    tag: "storefront",
    summary: "Stripe's events",
    description:
      "Verified by its Stripe-Signature; an event id is recorded once, and a repeat changes nothing.",
    headers: {
      "Stripe-Signature": { description: "Stripe's signature", required: true },
    },
    body: { schema: named("StripeEvent", stripeEventSchema) },
    answers: ok("WebhookAnswer", wire.webhookAnswerSchema, "Recorded"),
    errors: {
      400: "No or a wrong signature, or not a Stripe event",
      422: "Refused: a payment of another sandbox",
    },
  }),
];

const SESSION_OPS: [string, Operation][] = [
  op("POST /api/session", {
    tag: "session",
    auth: "optional",
    summary: "Sign in",
    description:
      "A guest keeps its sandbox and names it; a caller without a session gets a new sandbox.",
    body: { schema: named("SignIn", signInSchema) },
    answers: {
      201: {
        description: "Signed in",
        body: named("SignedIn", wire.signedInSchema),
        headers: SET_COOKIE,
      },
    },
  }),
  op("GET /api/session", {
    tag: "session",
    auth: "session",
    summary: "The current session and its CSRF token",
    answers: ok("Session", wire.sessionSchema),
  }),
  op("DELETE /api/session", {
    tag: "session",
    auth: "optional",
    summary: "Sign out",
    answers: { 204: { description: "Signed out; the cookie is cleared" } },
  }),
];

const events = (summary: string, params = {}, errors = {}) => ({
  tag: "session",
  auth: "session" as const,
  summary,
  description:
    "Server-sent events: `hello`, then `change` whenever something in the sandbox changed (at most one per 200 ms).",
  params,
  answers: {
    200: { description: "An event stream", contentType: "text/event-stream" },
  },
  errors: {
    429: "Too many open streams for this session or this client address",
    ...errors,
  },
});

const OPERATIONS_OPS: [string, Operation][] = [
  op("GET /api/events", events("Changes in the caller's sandbox")),
  op(
    "GET /api/orders/:orderId/events",
    events("Changes in the caller's sandbox, for an order's page", orderId, {
      404: "No such order in the caller's sandbox",
    }),
  ),
  op("GET /health", {
    tag: "operations",
    summary:
      "Whether the process has started and the database (and the broker) answer",
    answers: {
      200: { description: "Up", body: named("Health", wire.healthSchema) },
      503: {
        description: "Still starting, or the database or the broker is down",
        body: named("Health", wire.healthSchema),
      },
    },
  }),
  op("GET /metrics", {
    tag: "operations",
    summary: "Prometheus metrics",
    security: [{ metricsToken: [] }],
    answers: {
      200: { description: "Prometheus text", contentType: "text/plain" },
    },
    errors: { 401: "METRICS_TOKEN is set and was not sent" },
  }),
  op("GET /api/openapi.json", {
    tag: "operations",
    summary: "This document",
    answers: ok("OpenApiDocument", z.looseObject({ openapi: z.string() })),
  }),
  op("GET /api/docs", {
    tag: "operations",
    summary: "This document, readable in a browser",
    answers: { 200: { description: "A page", contentType: "text/html" } },
  }),
];

/** A console route: signed-in operators only, in their sandbox. */
const con = (key: string, spec: Omit<Spec, "tag" | "auth">) =>
  op(key, { tag: "console", auth: "operator", ...spec });

const deliveryId = { id: positiveId };
const NO_DEAD_LETTER = { 404: "No such dead letter in this sandbox" };
const answer = (description: string, name: string, schema: z.ZodType) => ({
  description,
  body: named(name, schema),
});
const BEYOND_HORIZON = {
  409: "Some are beyond the replay horizon; send force: true to redrive them",
};

const CONSOLE: [string, Operation][] = [
  con("GET /api/console/overview", {
    summary: "Everything the console's first page shows",
    answers: ok("Overview", contracts.overviewDataSchema),
  }),
  con("GET /api/console/outbox", {
    summary: "Outbox ages: pending rows, the oldest, a histogram",
    answers: ok("OutboxAges", contracts.outboxAgesSchema),
  }),
  con("POST /api/console/outbox/release", {
    summary: "Make rows parked by the loop guard due again",
    description: "No body, or an empty one: every parked row of the sandbox.",
    body: { schema: named("Release", releaseSchema), required: false },
    answers: ok("ReleaseAnswer", contracts.releaseAnswerSchema),
  }),
  con("GET /api/console/deliveries", {
    summary: "Deliveries, by state and filter, with counts per state",
    query: deliveriesQuery,
    answers: ok("Deliveries", contracts.deliveriesDataSchema),
  }),
  con("GET /api/console/deliveries/:id", {
    summary: "One delivery with its envelope, attempts and actions",
    params: deliveryId,
    answers: ok("DeliveryDetail", contracts.deliveryDetailDataSchema),
    errors: { 404: "No such delivery in this sandbox" },
  }),
  con("GET /api/console/dead-letters", {
    summary: "Dead letters, oldest first",
    query: deadLetterQuery,
    answers: ok("DeadLetters", contracts.deadLettersDataSchema),
  }),
  con("GET /api/console/failure-groups", {
    summary: "Dead letters grouped by receiver, event type and error",
    answers: ok("FailureGroups", contracts.failureGroupsDataSchema),
  }),
  con("POST /api/console/dead-letters/redrive", {
    summary: "Redrive the dead letters a filter matches, oldest first",
    body: { schema: named("BulkRedrive", bulkSchema) },
    answers: {
      200: answer(
        "dryRun: nothing changed",
        "DryRun",
        contracts.dryRunAnswerSchema,
      ),
      202: {
        description: "Sent again; over 100 rows, a job does it",
        body: named(
          "RedriveOrJob",
          z.union([contracts.redriveAnswerSchema, contracts.jobStartedSchema]),
        ),
      },
    },
    errors: BEYOND_HORIZON,
  }),
  con("POST /api/console/dead-letters/refuse", {
    summary: "Refuse the dead letters a filter matches, with a reason",
    body: { schema: named("BulkRefuse", bulkRefuseSchema) },
    answers: {
      200: {
        description: "Refused; or, for dryRun, nothing changed",
        body: named(
          "RefuseOrDryRun",
          z.union([contracts.refuseAnswerSchema, contracts.dryRunAnswerSchema]),
        ),
      },
      202: answer(
        "Over 100 rows: a job",
        "JobStarted",
        contracts.jobStartedSchema,
      ),
    },
  }),
  con("POST /api/console/dead-letters/:id/redrive", {
    summary: "Send one dead letter again, under the same message id",
    params: deliveryId,
    body: { schema: named("Force", forceSchema), required: false },
    answers: {
      202: answer("Sent again", "RedriveAnswer", contracts.redriveAnswerSchema),
    },
    errors: { ...NO_DEAD_LETTER, ...BEYOND_HORIZON },
  }),
  con("POST /api/console/dead-letters/:id/refuse", {
    summary: "Close one dead letter as refused",
    params: deliveryId,
    body: { schema: named("Reason", reasonSchema) },
    answers: ok("RefuseAnswer", contracts.refuseAnswerSchema, "Refused"),
    errors: NO_DEAD_LETTER,
  }),
  con("POST /api/console/dead-letters/:id/supersede", {
    summary: "Send a corrected copy of a dead letter under a new id",
    params: deliveryId,
    body: { schema: named("Supersede", supersedeSchema) },
    answers: {
      201: answer(
        "The copy is on its way; the original is refused",
        "SupersedeAnswer",
        contracts.supersedeAnswerSchema,
      ),
    },
    errors: {
      400: "Bad input, or a payload its event type does not allow",
      ...NO_DEAD_LETTER,
      409: "The receiver applied it after all, or it was superseded too often",
    },
  }),
  con("GET /api/console/redrive-outcome", {
    summary: "What became of redriven dead letters",
    description:
      "Pass the `ids` a redrive answered with. Applied, still retrying, or " +
      "dead again with the receiver's answer; `settled` once none retries.",
    query: redriveOutcomeQuery,
    answers: ok("RedriveOutcome", contracts.redriveOutcomeSchema),
  }),
  con("GET /api/console/jobs/:jobId", {
    summary: "A bulk action's job",
    answers: ok("Job", contracts.jobViewSchema),
    errors: { 404: "No such job in this sandbox" },
  }),
  con("POST /api/console/jobs/:jobId/cancel", {
    summary: "Stop a bulk action's job",
    answers: ok("Job", contracts.jobViewSchema),
    errors: { 404: "No such job in this sandbox" },
  }),
  con("GET /api/console/actions", {
    summary: "The operator log, newest first, a page at a time",
    query: actionsQuerySchema,
    answers: ok("Actions", contracts.actionsDataSchema),
  }),
  con("GET /api/console/search", {
    summary: "Find orders, messages and deliveries",
    query: searchQuery,
    answers: ok("Search", contracts.searchDataSchema),
  }),
  con("GET /api/console/closure", {
    summary: "Every obligation's state, in all and per receiver",
    answers: ok("Closure", contracts.closurePageSchema),
  }),
  con("GET /api/console/closure/rows", {
    summary: "The obligations behind one cell of the closure matrix",
    query: closureRowsQuery,
    answers: ok("ClosureRows", contracts.closureRowsDataSchema),
  }),
  con("GET /api/console/faults", {
    summary: "The fault switches of the sandbox",
    answers: ok("Faults", contracts.faultsDataSchema),
  }),
  con("PUT /api/console/faults", {
    summary: "Switch faults on or off; the others stay",
    body: { schema: named("FaultChanges", faultsSchema) },
    answers: ok("Faults", contracts.faultsDataSchema, "Every fault"),
  }),
  con("GET /api/console/receivers/:name", {
    summary: "Whether a receiver is paused",
    answers: ok("ReceiverPause", contracts.receiverPauseSchema),
    errors: { 404: "No such receiver" },
  }),
  con("PUT /api/console/receivers/:name", {
    summary: "Pause or resume a receiver in the sandbox",
    body: { schema: named("Pause", pauseSchema) },
    answers: ok("ReceiverPauseSet", contracts.receiverPauseSetSchema),
    errors: { 404: "No such receiver" },
  }),
  con("GET /api/console/alerts", {
    summary: "The alerts that fire now",
    answers: ok("Alerts", contracts.alertsDataSchema),
  }),
  con("GET /api/console/workers", {
    summary:
      "Every worker process by its heartbeat, live or silent (shared by every sandbox)",
    answers: ok("Workers", contracts.workersDataSchema),
  }),
  con("GET /api/console/alert-board", {
    summary:
      "The banner's alerts (firing, recovering, resolved) and the dead letters",
    answers: ok("AlertBoard", contracts.alertBoardSchema),
  }),
  con("POST /api/console/alerts/:id/acknowledge", {
    summary: "Acknowledge an alert; the operator log keeps it",
    params: { id: z.string().regex(/^\d{1,18}$/) },
    answers: ok("AlertEpisode", contracts.alertEpisodeSchema),
    errors: {
      400: "Not an alert's id",
      404: "No alert to acknowledge by that id",
    },
  }),
  con("GET /api/console/receivers", {
    summary: "Each receiver over the last hour",
    answers: ok("Receivers", contracts.receiversDataSchema),
  }),
  con("GET /api/console/order-violations", {
    summary: "Messages that arrived after a later version of their order",
    query: violationsQuery,
    answers: ok("OrderViolations", contracts.orderViolationsSchema),
  }),
  con("GET /api/kitchen/board", {
    summary: "The kitchen's cards",
    answers: ok("KitchenBoard", contracts.boardDataSchema),
  }),
  con("GET /api/console/checkout-events", {
    summary: "Test-checkout events the webhook has not taken",
    answers: ok("CheckoutEvents", contracts.checkoutEventsSchema),
  }),
  con("POST /api/console/checkout-events/:id/send-again", {
    summary: "Send a test-checkout event that gave up once more",
    params: { id: eventId },
    answers: {
      202: answer(
        "Queued again",
        "CheckoutEventSent",
        contracts.checkoutEventSentSchema,
      ),
    },
    errors: {
      400: "Not a checkout event id",
      404: "No checkout event that gave up by that id",
    },
  }),
];

const LABS_AND_HOW: [string, Operation][] = [
  op("GET /api/labs/ledger", {
    tag: "labs",
    auth: "operator",
    summary: "The ledger's scenarios and the rows of the last run",
    answers: ok("Ledger", wire.ledgerSchema),
  }),
  op("POST /api/labs/ledger/:scenario", {
    tag: "labs",
    auth: "operator",
    summary: "Run a ledger scenario from a clean slate",
    answers: ok("LedgerRun", wire.ledgerRunSchema),
    errors: { 404: "No such scenario" },
  }),
  op("GET /api/labs/queue", {
    tag: "labs",
    auth: "operator",
    summary: "The Queue Lab's last run, or null",
    answers: ok("QueueLabLast", wire.queueLabLastSchema),
  }),
  op("POST /api/labs/queue", {
    tag: "labs",
    auth: "operator",
    summary: "Run the Queue Lab",
    body: { schema: named("QueueLabSettings", queueLabSchema) },
    answers: ok("QueueLabRun", wire.queueLabRunSchema),
  }),
  op("GET /api/how-it-works", {
    tag: "how-it-works",
    auth: "optional",
    summary: "The How it's built page; the sandbox's figures with a session",
    answers: ok("HowItWorks", wire.howItWorksSchema),
  }),
  op("GET /api/how-it-works/costs", {
    tag: "how-it-works",
    auth: "session",
    summary: "What a paid order costs in rows, bytes and time",
    answers: ok("Costs", wire.costsSchema),
  }),
  op("GET /api/how-it-works/try-it", {
    tag: "how-it-works",
    auth: "session",
    summary: "The walkthrough's checklist, from the sandbox's rows",
    answers: ok("TryIt", wire.tryItSchema),
  }),
];

let built: Record<string, unknown> | undefined;

/**
 * The document, built once: the schemas do not change while the process
 * runs, and building it converts about a hundred of them.
 */
export function bakeryOpenApi(): Record<string, unknown> {
  return built ??= openApiDocument({
    info: {
      title: "Outbox Bakery",
      version: "1",
      description:
        "Every page of the storefront and the console has a JSON twin here. Errors are `{ error, issues: [{ path, message }] }`. A request that changes state needs the session cookie and a same-site `Origin` or `X-CSRF-Token` (from `GET /api/session`). Times are ISO 8601, ages seconds, money integer cents.",
    },
    tags: [
      { name: "storefront", description: "Menu, orders, payments" },
      { name: "session", description: "Signing in, and live changes" },
      { name: "console", description: "The operator console's twins" },
      { name: "labs", description: "The ledger and the Queue Lab" },
      { name: "how-it-works", description: "The How it's built page" },
      { name: "operations", description: "Probes, metrics, this document" },
    ],
    securitySchemes: {
      session: {
        type: "apiKey",
        in: "cookie",
        name: "bakery_session",
        description:
          "Set by POST /api/session; `__Host-bakery_session` over https.",
      },
      metricsToken: { type: "http", scheme: "bearer" },
    },
    operations: Object.fromEntries([
      ...STOREFRONT,
      ...SESSION_OPS,
      ...CONSOLE,
      ...LABS_AND_HOW,
      ...OPERATIONS_OPS,
    ]),
  });
}
