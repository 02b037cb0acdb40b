/**
 * The console's wire contracts: one zod schema per JSON twin (and per answer
 * of an operator action), and the types inferred from them. The read models
 * in services/console/ type their SQL rows, map them to these shapes and
 * parse the result here before it leaves for a page or its twin, so a
 * column renamed or a type changed in SQL fails at the boundary, with the
 * field named, instead of reaching a browser. The islands read the types
 * through islands/_console_types.ts (`import type` only: neither zod nor
 * the database code goes into the browser bundle).
 *
 * Every object is strict: a field that is not in the contract is an error,
 * as a missing one is.
 */
import { z } from "zod";
import {
  DELIVERY_STATES,
  type DeliveryState,
} from "../../lib/ledger/states.ts";
import { OUTBOX_STATES, type OutboxState } from "../../lib/outbox/states.ts";
import { envelopeSchema } from "../../lib/outbox/envelope.ts";

/** A time as `Date.toISOString()` writes it. */
const time = z.iso.datetime();
const count = z.number().int().nonnegative();
const id = z.number().int().positive();

// --- Outbox ------------------------------------------------------------

/** `GET /api/console/outbox`, and the overview's `outbox`. */
export const outboxAgesSchema = z.strictObject({
  pending: count,
  ready: count,
  backingOff: count,
  /** Rows parked by the loop guard (waiting for a command or an operator). */
  parked: count,
  oldestReadyAgeSeconds: z.number().nonnegative().nullable(),
  oldestAgeSeconds: z.number().nonnegative().nullable(),
  buckets: z.array(z.strictObject({
    le: z.union([z.number().positive(), z.literal("+Inf")]),
    count,
  })),
  byService: z.array(z.strictObject({
    service: z.string(),
    eventType: z.string(),
    pending: count,
    ready: count,
    backingOff: count,
    /** Of `backingOff`, the rows parked by the loop guard. */
    parked: count,
    oldestReadyAgeSeconds: z.number().nonnegative().nullable(),
    oldestAgeSeconds: z.number().nonnegative().nullable(),
  })),
  oldest: z.array(z.strictObject({
    messageId: z.string(),
    service: z.string(),
    eventType: z.string(),
    orderId: z.string(),
    state: z.enum(OUTBOX_STATES as [OutboxState, ...OutboxState[]]),
    ageSeconds: z.number().nonnegative(),
    attempts: count,
    lastError: z.string().nullable(),
    /** Null for a row parked by the loop guard (no next attempt). */
    nextAttemptAt: time.nullable(),
    ready: z.boolean(),
  })),
  /**
   * The oldest rows parked by the loop guard, whatever their place among
   * `oldest`: the rows an operator may release
   * (`POST /api/console/outbox/release`).
   */
  parkedRows: z.array(z.strictObject({
    messageId: z.string(),
    service: z.string(),
    eventType: z.string(),
    orderId: z.string(),
    ageSeconds: z.number().nonnegative(),
    attempts: count,
    lastError: z.string().nullable(),
  })),
});
export type OutboxAges = z.infer<typeof outboxAgesSchema>;

/** `POST /api/console/outbox/release`: how many parked rows became due. */
export const releaseAnswerSchema = z.strictObject({ count });
export type ReleaseAnswer = z.infer<typeof releaseAnswerSchema>;

// --- Closure -----------------------------------------------------------

/** The states of an obligation; services/console/closure.ts says each. */
export const CLOSURE_STATES = [
  "owed",
  "inFlight",
  "acceptedUnacked",
  "closed",
  "dead",
  "refused",
  "mismatch",
] as const;
export type ClosureState = typeof CLOSURE_STATES[number];

export const closureCountsSchema = z.strictObject(
  Object.fromEntries(CLOSURE_STATES.map((s) => [s, count])) as Record<
    ClosureState,
    typeof count
  >,
);
export type ClosureCounts = z.infer<typeof closureCountsSchema>;

/** `GET /api/console/closure`, and the overview's `closure`. */
export const closureDataSchema = z.strictObject({
  totals: closureCountsSchema,
  bySubscriber: z.record(z.string(), closureCountsSchema),
});
export type ClosureData = z.infer<typeof closureDataSchema>;

/** What is kept of finished work, and for how long (services/retention.ts). */
export const retentionSchema = z.strictObject({
  /** False: nothing finished is ever removed (RETENTION=off). */
  on: z.boolean(),
  replayHorizonDays: count,
  marginDays: count,
  /** The horizon plus the margin: finished work older than this goes. */
  keptDays: count,
});
export type Retention = z.infer<typeof retentionSchema>;

/** `GET /api/console/closure`: the matrix, and what is kept. */
export const closurePageSchema = closureDataSchema.extend({
  retention: retentionSchema,
});
export type ClosurePage = z.infer<typeof closurePageSchema>;

/** One obligation behind a cell of the closure matrix. */
export const closureRowSchema = z.strictObject({
  messageId: z.string(),
  eventType: z.string(),
  orderId: z.string(),
  /** The outbox it waits in, for an owed one; else null. */
  sender: z.string().nullable(),
  /** Its delivery, once the queue has it; else null. */
  deliveryId: id.nullable(),
  detail: z.string(),
  at: time,
});
export type ClosureRow = z.infer<typeof closureRowSchema>;

/** `GET /api/console/closure/rows?subscriber=&state=`. */
export const closureRowsDataSchema = z.strictObject({
  items: z.array(closureRowSchema),
});
export type ClosureRowsData = z.infer<typeof closureRowsDataSchema>;

// --- Deliveries and dead letters ---------------------------------------

/** One delivery (message × receiver) as the lists show it. */
export const deliveryItemSchema = z.strictObject({
  id,
  messageId: z.string(),
  eventType: z.string(),
  subscriber: z.string(),
  orderId: z.string(),
  state: z.enum(DELIVERY_STATES as [DeliveryState, ...DeliveryState[]]),
  attempts: count,
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  /** Set while the delivery is open (pending or in flight). */
  nextAttemptAt: time.nullable(),
  createdAt: time,
  deadAt: time.nullable(),
  redrives: count,
  refusedReason: z.string().nullable(),
  refusedBy: z.string().nullable(),
  refusedAt: time.nullable(),
  /**
   * A dead letter whose message is older than the receivers' replay
   * horizon: its redrive answers 409 unless forced. False for the rest.
   */
  beyondReplayHorizon: z.boolean(),
  /**
   * Set while the delivery is held: the earlier delivery of its order to
   * the same receiver that it waits behind (dead, held, or still open when
   * this one ran out of retries). Null otherwise.
   */
  heldBehind: id.nullable(),
});
export type DeliveryItem = z.infer<typeof deliveryItemSchema>;

/** Counts per tab of the deliveries page (the states, and "retrying"). */
export const deliveryCountsSchema = z.strictObject(
  Object.fromEntries(
    [...DELIVERY_STATES, "retrying"].map((s) => [s, count]),
  ) as Record<DeliveryState | "retrying", typeof count>,
);
export type DeliveryCounts = z.infer<typeof deliveryCountsSchema>;

/** `GET /api/console/deliveries?state=`. */
export const deliveriesDataSchema = z.strictObject({
  counts: deliveryCountsSchema,
  items: z.array(deliveryItemSchema),
});
export type DeliveriesData = z.infer<typeof deliveriesDataSchema>;

/** `GET /api/console/deliveries/:id`. */
export const deliveryDetailDataSchema = z.strictObject({
  delivery: deliveryItemSchema,
  /** Null only if its message is gone (a wiped sandbox's leftovers). */
  envelope: envelopeSchema.nullable(),
  attempts: z.array(z.strictObject({
    attempt: id,
    startedAt: time,
    durationMs: z.number().int().nonnegative(),
    /** The receiver's HTTP status; null when none came (a timeout). */
    status: z.number().int().nullable(),
    outcome: z.enum(["done", "retry", "dead"]),
    error: z.string().nullable(),
  })),
  actions: z.array(z.strictObject({
    action: z.enum(["redrive", "refuse"]),
    actor: z.string(),
    reason: z.string().nullable(),
    at: time,
  })),
  /** This dead letter's corrected copy (a supersede), if any. */
  supersededBy: z.strictObject({
    messageId: z.string(),
    deliveryId: id.nullable(),
    actor: z.string(),
    reason: z.string(),
    at: time,
  }).nullable(),
  /** The dead letter this delivery's message corrects, if any. */
  supersedes: id.nullable(),
});
export type DeliveryDetailData = z.infer<typeof deliveryDetailDataSchema>;

/** `GET /api/console/dead-letters`. */
export const deadLettersDataSchema = z.strictObject({
  items: z.array(deliveryItemSchema),
});
export type DeadLettersData = z.infer<typeof deadLettersDataSchema>;

/** Dead letters of one receiver, for the overview. */
export const deadLetterSummarySchema = z.strictObject({
  subscriber: z.string(),
  count: id,
  oldestDeadAt: time,
});
export type DeadLetterSummary = z.infer<typeof deadLetterSummarySchema>;

/** How one receiver answered lately, for the overview. */
export const receiverHealthSchema = z.strictObject({
  subscriber: z.string(),
  attempts: id,
  /** Of the attempts, the share that was done; null with none. */
  successRate: z.number().min(0).max(1).nullable(),
  lastError: z.string().nullable(),
  lastAttemptAt: time,
});
export type ReceiverHealth = z.infer<typeof receiverHealthSchema>;

// --- Refunds -----------------------------------------------------------

export const refundDueSchema = z.strictObject({
  paymentId: z.string(),
  orderId: z.string(),
  /** What was charged, in cents of `currency`. */
  amountCents: z.number().int(),
  /** Null when only the orders service knows of it (it records no currency). */
  currency: z.string().nullable(),
  reason: z.string(),
  /** Who kept it for a refund. */
  keptBy: z.enum(["billing", "orders"]),
  at: time,
});
export type RefundDue = z.infer<typeof refundDueSchema>;

/** Payments needing a refund: newest first, and how many in all. */
export const refundsDueSchema = z.strictObject({
  total: count,
  items: z.array(refundDueSchema),
});
export type RefundsDue = z.infer<typeof refundsDueSchema>;

// --- The test checkout's events ------------------------------------------

/** A test-checkout event not yet answered 2xx after its first try. */
export const checkoutEventSchema = z.strictObject({
  eventId: z.string(),
  paymentId: z.string(),
  orderId: z.string().nullable(),
  state: z.enum(["pending", "gave_up"]),
  attempts: count,
  /** The webhook's last status; null when it did not answer at all. */
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: time,
  /** When it goes again; null once given up. */
  nextAttemptAt: time.nullable(),
});
export type CheckoutEvent = z.infer<typeof checkoutEventSchema>;

/** Events still retrying or given up: oldest first, and how many in all. */
export const checkoutEventsSchema = z.strictObject({
  total: count,
  items: z.array(checkoutEventSchema),
});
export type CheckoutEvents = z.infer<typeof checkoutEventsSchema>;

// --- Receivers, alerts, order violations ------------------------------

/** One minute of one receiver's attempts. */
export const receiverMinuteSchema = z.strictObject({
  /** The minute's start. */
  at: time,
  attempts: count,
  /** Attempts answered 2xx: the throughput. */
  done: count,
  /** p95 of the attempts' durations in the minute; null without attempts. */
  p95LatencyMs: z.number().nonnegative().nullable(),
});
export type ReceiverMinute = z.infer<typeof receiverMinuteSchema>;

/** A receiver over the last hour. */
export const receiverStatsSchema = z.strictObject({
  name: z.string(),
  /** Paused in the sandbox (services/console/pauses.ts). */
  paused: z.boolean(),
  attempts: count,
  done: count,
  /** done / attempts; null without attempts. */
  successRate: z.number().min(0).max(1).nullable(),
  lastError: z.string().nullable(),
  lastErrorAt: time.nullable(),
  /** Done attempts per minute, averaged over the hour. */
  throughputPerMinute: z.number().nonnegative(),
  /** p95 of every attempt's duration in the hour; null without attempts. */
  p95LatencyMs: z.number().nonnegative().nullable(),
  /** Each minute of the window, oldest first, the current one last. */
  minutes: z.array(receiverMinuteSchema),
});
export type ReceiverStats = z.infer<typeof receiverStatsSchema>;

/** `GET /api/console/receivers`. */
export const receiversDataSchema = z.strictObject({
  receivers: z.array(receiverStatsSchema),
});
export type ReceiversData = z.infer<typeof receiversDataSchema>;

/** `GET /api/console/receivers/:name`: whether it is paused in the sandbox. */
export const receiverPauseSchema = z.strictObject({
  name: z.string(),
  paused: z.boolean(),
});
export type ReceiverPause = z.infer<typeof receiverPauseSchema>;

/** `PUT /api/console/receivers/:name`; `changed` false when it already was. */
export const receiverPauseSetSchema = receiverPauseSchema.extend({
  changed: z.boolean(),
});
export type ReceiverPauseSet = z.infer<typeof receiverPauseSetSchema>;

/**
 * One process of relays or consumers, by its heartbeat (queue.workers).
 * Shared by every sandbox: each operator sees them all, and none acts on
 * them.
 */
export const workerSchema = z.strictObject({
  /** The owner id it writes into its leases. */
  id: z.string(),
  host: z.string(),
  pid: id,
  roles: z.array(z.enum(["relay", "consume"])),
  /** The carrier it runs on: postgres or jetstream. */
  transport: z.string(),
  /** Live while its last beat is younger than three beats; then silent. */
  state: z.enum(["live", "silent"]),
  /** Leases it held at its last beat; 0 once the latest has expired. */
  leases: count,
  lastClaimAt: time.nullable(),
  lastBeatAt: time,
  version: z.string(),
});
export type Worker = z.infer<typeof workerSchema>;

/** `GET /api/console/workers`: live ones first. */
export const workersDataSchema = z.strictObject({
  items: z.array(workerSchema),
});
export type WorkersData = z.infer<typeof workersDataSchema>;

/** One alert that fires now. */
export const alertSchema = z.strictObject({
  kind: z.enum([
    "outbox_age",
    "dead_letters",
    "success_rate",
    // services/console/worker_alerts.ts
    "no_live_worker",
    "silent_worker",
  ]),
  /**
   * The service (outbox_age), subscriber, role (no_live_worker: relay or
   * consume) or worker id (silent_worker) the alert is about.
   */
  subject: z.string(),
  /** Seconds, a count, or a rate from 0 to 1, by kind. */
  value: z.number(),
  threshold: z.number(),
  /** When the reading crossed the threshold (as far as the rows tell). */
  since: time,
});
export type Alert = z.infer<typeof alertSchema>;

/** `GET /api/console/alerts`. */
export const alertsDataSchema = z.strictObject({
  alerts: z.array(alertSchema),
});
export type AlertsData = z.infer<typeof alertsDataSchema>;

/**
 * One episode of an alert (services/console/alert_episodes.ts): firing,
 * recovering or resolved, and who acknowledged it.
 */
export const alertEpisodeSchema = alertSchema.extend({
  id,
  state: z.enum(["firing", "recovering", "resolved"]),
  changedAt: time,
  resolvedAt: time.nullable(),
  acknowledgedBy: z.string().nullable(),
  acknowledgedAt: time.nullable(),
});
export type AlertEpisode = z.infer<typeof alertEpisodeSchema>;

/**
 * `GET /api/console/alert-board`: the banner's episodes (open ones, and
 * those resolved in the last minutes and not acknowledged), and the
 * sandbox's dead letters for the side bar's count.
 */
export const alertBoardSchema = z.strictObject({
  alerts: z.array(alertEpisodeSchema),
  deadLetters: z.number().int().nonnegative(),
});
export type AlertBoard = z.infer<typeof alertBoardSchema>;

/** A message that reached a receiver after a later version of its aggregate. */
export const orderViolationSchema = z.strictObject({
  subscriber: z.string(),
  aggregateId: z.string(),
  messageId: z.string(),
  eventType: z.string(),
  arrivedVersion: id,
  appliedVersion: id,
  at: time,
});
export type OrderViolation = z.infer<typeof orderViolationSchema>;

/** `GET /api/console/order-violations`. */
export const orderViolationsSchema = z.strictObject({
  /** How many there are in all (the items are the newest 100). */
  total: count,
  items: z.array(orderViolationSchema),
});
export type OrderViolations = z.infer<typeof orderViolationsSchema>;

// --- Overview, faults, kitchen ----------------------------------------

/** `GET /api/console/overview`. */
export const overviewDataSchema = z.strictObject({
  outbox: outboxAgesSchema,
  closure: closureDataSchema,
  deadLetters: z.array(deadLetterSummarySchema),
  receivers: z.array(receiverHealthSchema),
  refunds: refundsDueSchema,
  /** Test-checkout events that the webhook has not yet taken. */
  checkoutEvents: checkoutEventsSchema,
  /** Every receiver over the last hour, for the charts. */
  lastHour: z.array(receiverStatsSchema),
  orderViolations: z.strictObject({ total: count }),
  /**
   * Deliveries the broker lost that the ledger sent again (JetStream), and
   * how many copies that took.
   */
  republished: z.strictObject({ deliveries: count, copies: count }),
  /**
   * Deliveries pending after a failed attempt, and the soonest next
   * attempt: a receiver's retries, which the outbox's figures do not count.
   */
  retryingDeliveries: z.strictObject({
    count,
    nextAttemptAt: time.nullable(),
  }),
  /**
   * The workers by their heartbeat (`GET /api/console/workers` counted):
   * shared by every sandbox, so every overview has the same figures.
   */
  workers: z.strictObject({ live: count, silent: count }),
});
export type OverviewData = z.infer<typeof overviewDataSchema>;

/** `GET /api/console/faults` (and the answer of its PUT): name → on. */
export const faultsDataSchema = z.record(z.string(), z.boolean());
export type FaultsData = z.infer<typeof faultsDataSchema>;

/** One kitchen card. */
export const kitchenCardSchema = z.strictObject({
  orderId: z.string(),
  state: z.enum(["new", "confirmed", "cancelled"]),
  version: id,
  /** The order's lines, as OrderPlaced carried them. */
  items: z.array(z.strictObject({
    sku: z.string(),
    name: z.string(),
    qty: id,
    unitCents: z.number().int().nonnegative(),
  })),
  /** The day it is baked for, once the schedule reserved one. */
  day: z.iso.date().nullable(),
  updatedAt: time,
});
export type KitchenCard = z.infer<typeof kitchenCardSchema>;

/** `GET /api/kitchen/board`. */
export const boardDataSchema = z.strictObject({
  cards: z.array(kitchenCardSchema),
});
export type BoardData = z.infer<typeof boardDataSchema>;

// --- Answers of the operator's actions ---------------------------------

/** `POST /api/console/dead-letters[/:id]/redrive`: 202, what was sent again. */
export const redriveAnswerSchema = z.strictObject({
  count,
  ids: z.array(id),
});
export type RedriveAnswer = z.infer<typeof redriveAnswerSchema>;

/** A redriven delivery that died again, with the receiver's last answer. */
export const deadAgainSchema = z.strictObject({
  id,
  messageId: z.string(),
  eventType: z.string(),
  subscriber: z.string(),
  orderId: z.string(),
  lastError: z.string().nullable(),
});
export type DeadAgainItem = z.infer<typeof deadAgainSchema>;

/**
 * `GET /api/console/redrive-outcome?ids=` (and a redrive job's `outcome`):
 * what became of redriven deliveries. Never a bare success: a redrive is
 * applied only when its receiver says so.
 */
export const redriveOutcomeSchema = z.strictObject({
  /** Done: the receiver applied them. */
  applied: count,
  /** Pending or in flight: not answered for good yet. */
  retrying: count,
  /** Dead again since the redrive, with the answer that killed each. */
  deadAgain: z.array(deadAgainSchema),
  /** Closed by an operator since. */
  refused: count,
  /** Still dead and not redriven (a job has not reached them yet). */
  notRedriven: count,
  /** True once none is retrying: the outcome will not change by itself. */
  settled: z.boolean(),
});
export type RedriveOutcomeView = z.infer<typeof redriveOutcomeSchema>;

/** `POST /api/console/dead-letters[/:id]/refuse`: what was closed, why, by whom. */
export const refuseAnswerSchema = z.strictObject({
  count,
  ids: z.array(id),
  reason: z.string(),
  actor: z.string(),
});
export type RefuseAnswer = z.infer<typeof refuseAnswerSchema>;

/**
 * A dead letter that a redrive's selection waits on: written before one of
 * them, to the same receiver, for the same order, and dead itself. Sent
 * without it, those are refused "not yet" and die again.
 */
export const waitedOnSchema = z.strictObject({
  id,
  messageId: z.string(),
  eventType: z.string(),
  subscriber: z.string(),
  orderId: z.string(),
  lastError: z.string().nullable(),
  deadAt: time,
  /** The selected dead letters that wait on it. */
  before: z.array(id),
});
export type WaitedOn = z.infer<typeof waitedOnSchema>;

/** A bulk action's `dryRun`: 200, how many it would take; nothing changed. */
export const dryRunAnswerSchema = z.strictObject({
  count,
  /** Of those, the ones a redrive would need `force` for. */
  beyondReplayHorizon: count,
  /**
   * A redrive's only, and only when there are any: the dead letters the
   * selection waits on. `"includeEarlier": true` redrives them too.
   */
  waitsOn: z.array(waitedOnSchema).optional(),
  /**
   * A redrive's only: what each of the first 50 would do at its receiver,
   * found by applying it in a transaction that is rolled back.
   */
  preview: z.array(z.strictObject({
    id,
    messageId: z.string(),
    subscriber: z.string(),
    outcome: z.enum([
      "apply",
      "duplicate",
      "not_yet",
      "refused",
      "fail",
      "beyond_horizon",
    ]),
    detail: z.string(),
  })).optional(),
});
export type DryRunAnswer = z.infer<typeof dryRunAnswerSchema>;

/** A bulk action over 100 rows: 202, the job that does it at its pace. */
export const jobStartedSchema = z.strictObject({
  jobId: z.string(),
  count,
});
export type JobStarted = z.infer<typeof jobStartedSchema>;

/** `POST /api/console/dead-letters/:id/supersede`: 201, the corrected copy. */
export const supersedeAnswerSchema = z.strictObject({
  messageId: z.string(),
  /** Its delivery to the same receiver. */
  deliveryId: id,
  /** The dead letter it corrects, now refused "superseded by ...". */
  supersedes: id,
});
export type SupersedeAnswer = z.infer<typeof supersedeAnswerSchema>;

/** `POST /api/console/checkout-events/:id/send-again`: 202, queued again. */
export const checkoutEventSentSchema = z.strictObject({
  eventId: z.string(),
  state: z.literal("pending"),
});
export type CheckoutEventSent = z.infer<typeof checkoutEventSentSchema>;

// --- Failure groups, jobs, operator log, search -------------------------

/** Dead letters of one subscriber, event type and error pattern. */
export const failureGroupSchema = z.strictObject({
  key: z.string().regex(/^[0-9a-f]{16}$/),
  subscriber: z.string(),
  eventType: z.string(),
  pattern: z.string(),
  count: id,
  firstDeadAt: time,
  lastDeadAt: time,
});
export type FailureGroup = z.infer<typeof failureGroupSchema>;

/** `GET /api/console/failure-groups`: largest first. */
export const failureGroupsDataSchema = z.strictObject({
  groups: z.array(failureGroupSchema),
});
export type FailureGroupsData = z.infer<typeof failureGroupsDataSchema>;

/** `GET /api/console/jobs/:jobId` (and the answer of its cancel). */
export const jobViewSchema = z.strictObject({
  jobId: z.string(),
  action: z.enum(["redrive", "refuse"]),
  /** services/console/jobs.ts says who moves a job out of each state. */
  state: z.enum(["running", "done", "cancelled"]),
  /** Ids taken so far. */
  done: z.number().int().nonnegative(),
  total: z.number().int().nonnegative(),
  /** Of those, how many were still dead letters and were acted on. */
  changed: z.number().int().nonnegative(),
  ratePerSecond: id,
  actor: z.string(),
  createdAt: time,
  finishedAt: time.nullable(),
  /**
   * A redrive job's, read one job at a time (`GET /api/console/jobs/:jobId`):
   * what became of the rows it has redriven so far.
   */
  outcome: redriveOutcomeSchema.optional(),
});
export type JobView = z.infer<typeof jobViewSchema>;

/** One logged operator action. */
export const operatorActionSchema = z.strictObject({
  at: time,
  actor: z.string(),
  action: z.enum([
    "redrive",
    "refuse",
    "supersede",
    "cancel",
    "pause",
    "resume",
    "release",
    "acknowledge",
    "fault",
  ]),
  /**
   * What it was aimed at: ids, a filter, a group, a job or a delivery; for a
   * pause or a resume, the subscriber; for a release of parked outbox rows,
   * the message id, service and event type asked for (none: all).
   */
  target: z.record(z.string(), z.unknown()),
  /**
   * How many dead letters it changed (or, for a job, will); a pause, 1; a
   * release, the parked rows it made due.
   */
  count: z.number().int().nonnegative(),
  jobId: z.string().nullable(),
  /**
   * For an action on a failure group: the group named as people name it,
   * its receiver, event type and error pattern (absent when no delivery of
   * the sandbox has that pattern any more).
   */
  groupName: z.strictObject({
    subscriber: z.string(),
    eventType: z.string(),
    pattern: z.string(),
  }).optional(),
});
export type OperatorAction = z.infer<typeof operatorActionSchema>;

/**
 * `GET /api/console/actions`: a page of the operator log, newest first, and
 * the cursor of the next (older) page for `?before=`, null on the last.
 */
export const actionsDataSchema = z.strictObject({
  items: z.array(operatorActionSchema),
  next: z.string().nullable(),
});
export type ActionsData = z.infer<typeof actionsDataSchema>;

/** One thing the search box found. */
export const searchResultSchema = z.strictObject({
  kind: z.enum(["order", "message", "delivery"]),
  id: z.string(),
  summary: z.string(),
  href: z.string(),
});
export type SearchResult = z.infer<typeof searchResultSchema>;

/** `GET /api/console/search?q=`. */
export const searchDataSchema = z.strictObject({
  results: z.array(searchResultSchema),
});
export type SearchData = z.infer<typeof searchDataSchema>;

/**
 * The schema of every console JSON twin, by its route as the app registers
 * it. tests/console_contracts_test.ts checks that each GET route of the
 * console's API is here and that its answers parse: a new twin is one more
 * line.
 */
export const CONSOLE_TWINS = {
  "/api/console/overview": overviewDataSchema,
  "/api/console/outbox": outboxAgesSchema,
  "/api/console/deliveries": deliveriesDataSchema,
  "/api/console/deliveries/:id": deliveryDetailDataSchema,
  "/api/console/dead-letters": deadLettersDataSchema,
  "/api/console/closure": closurePageSchema,
  "/api/console/closure/rows": closureRowsDataSchema,
  "/api/console/faults": faultsDataSchema,
  "/api/console/receivers": receiversDataSchema,
  "/api/console/receivers/:name": receiverPauseSchema,
  "/api/console/workers": workersDataSchema,
  "/api/console/alerts": alertsDataSchema,
  "/api/console/alert-board": alertBoardSchema,
  "/api/console/order-violations": orderViolationsSchema,
  "/api/console/failure-groups": failureGroupsDataSchema,
  "/api/console/jobs/:jobId": jobViewSchema,
  "/api/console/redrive-outcome": redriveOutcomeSchema,
  "/api/console/actions": actionsDataSchema,
  "/api/console/search": searchDataSchema,
  "/api/console/checkout-events": checkoutEventsSchema,
  "/api/kitchen/board": boardDataSchema,
} as const;
