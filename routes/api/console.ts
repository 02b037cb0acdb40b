/**
 * The console's JSON API (the twin of every console page). Signed-in
 * operators only: a guest or a visitor without a session gets 401. Every
 * call acts inside the caller's sandbox; another sandbox's ids are 404.
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400, readJson, text } from "../../kit/http/validate.ts";
import { DELIVERY_STATES, TooManySupersessions } from "../../lib/ledger/mod.ts";
import { outboxAges } from "../../services/console/outbox.ts";
import {
  deliveryCounts,
  deliveryDetail,
  listDeliveries,
} from "../../services/console/deliveries.ts";
import {
  closure,
  CLOSURE_STATES,
  closureRows,
} from "../../services/console/closure.ts";
import { retentionSettings } from "../../services/retention.ts";
import { kitchenBoard } from "../../services/console/board.ts";
import { readFaults, writeFaults } from "../../services/console/faults.ts";
import { FAULT_NAMES } from "../../services/faults.ts";
import {
  pausedReceivers,
  pauseReceiver,
} from "../../services/console/pauses.ts";
import { receiverPauseSchema } from "../../services/console/contracts.ts";
import {
  SENDERS,
  type SubscriberName,
  SUBSCRIBERS,
} from "../../services/routing.ts";
import { payloads } from "../../services/events.ts";
import {
  BeyondReplayHorizon,
  bulkAction,
  type BulkRequest,
  type BulkResult,
} from "../../services/console/bulk.ts";
import { cancelJob, readJob } from "../../services/console/jobs.ts";
import {
  redriveOutcomeOf,
  waitedOnView,
} from "../../services/console/redrive_outcome.ts";
import { failureGroupsData } from "../../services/console/failure_groups.ts";
import {
  actionsQuerySchema,
  listActions,
} from "../../services/console/actions.ts";
import { search } from "../../services/console/search.ts";
import {
  AlreadyApplied,
  InvalidPayload,
  supersedeDeadLetter,
} from "../../services/console/supersede.ts";
import { currentAlerts } from "../../services/console/alerts.ts";
import { receiverStats } from "../../services/console/receivers.ts";
import { workersData } from "../../services/console/workers.ts";
import { overviewData } from "../../services/console/overview.ts";
import { orderViolations } from "../../services/console/violations.ts";
import { releaseParkedRows } from "../../services/console/release.ts";

/** The signed-in operator (a named session), or 401. */
export function requireOperator(c: Context) {
  const session = c.get("session");
  if (!session?.name) throw new HttpError(401, "sign in to use the console");
  return { sandboxId: session.sandboxId, actor: session.name };
}

const subscriber = z.enum(SUBSCRIBERS);
const eventType = z.enum(Object.keys(payloads) as [string, ...string[]]);
const isoTime = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const groupKey = z.string().regex(/^[0-9a-f]{16}$/, "a failure group's key");

export const deadLetterQuery = z.object({
  subscriber: subscriber.optional(),
  group: groupKey.optional(),
  eventType: eventType.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
});

export const deliveriesQuery = deadLetterQuery.extend({
  state: z.enum([...DELIVERY_STATES, "retrying"]).optional(),
  orderId: z.string().uuid().optional(),
});

export const bulkSchema = z.object({
  ids: z.array(z.number().int().positive()).max(1000).optional(),
  subscriber: subscriber.optional(),
  eventType: eventType.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  /** A failure group's key (GET /api/console/failure-groups). */
  group: groupKey.optional(),
  /** Count only: 200 { count }, nothing changes. */
  dryRun: z.boolean().optional(),
  /** A job's pace, rows per second (over 100 rows the action is a job). */
  ratePerSecond: z.number().int().min(1).max(1000).optional(),
  /** Redrive dead letters beyond the replay horizon too. */
  force: z.boolean().optional(),
  /**
   * Redrive the dead letters the selection waits on too (a dry run's
   * `waitsOn`): the earlier messages of the same order to the same receiver.
   */
  includeEarlier: z.boolean().optional(),
}).strict();

export const forceSchema = z.object({
  force: z.boolean().optional(),
  /** As in a bulk redrive: the earlier dead letters this one waits on too. */
  includeEarlier: z.boolean().optional(),
}).strict();

/** `GET /api/console/redrive-outcome?ids=1,2`: the redrive answer's ids. */
export const redriveOutcomeQuery = z.object({
  ids: z.string().transform((s, ctx) => {
    const ids = s.split(",").map(Number);
    if (
      ids.length > 1000 ||
      !ids.every((id) => Number.isSafeInteger(id) && id > 0)
    ) {
      ctx.addIssue({
        code: "custom",
        message: "up to 1000 delivery ids, separated by commas",
      });
      return z.NEVER;
    }
    return ids;
  }),
}).strict();

export const supersedeSchema = z.object({
  // Only its shape here: once the dead letter's event type is known, the
  // payload is checked whole by that type's own schema, the receiver's
  // (services/console/supersede.ts), which names every field that is wrong
  // at any depth (`payload.customer.name`), NUL and lone surrogates too.
  payload: z.record(z.string(), z.unknown()),
  reason: text().trim().min(1, "a reason is required").max(
    500,
    "at most 500 characters",
  ),
}).strict();

export const searchQuery = z.object({
  q: text().trim().max(200, "at most 200 characters"),
}).strict();

export const reasonSchema = z.object({
  reason: text().trim().min(1, "a reason is required").max(
    500,
    "at most 500 characters",
  ),
}).strict();

// A dry run of a refusal needs no reason; the refusal itself does.
export const bulkRefuseSchema = bulkSchema.extend({
  reason: reasonSchema.shape.reason.optional(),
}).strict();

export const violationsQuery = z.object({ subscriber: subscriber.optional() })
  .strict();

export const faultsSchema = z.record(z.string(), z.boolean()).superRefine(
  (value, ctx) => {
    for (const name of Object.keys(value)) {
      if (!FAULT_NAMES.includes(name)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "no such fault",
        });
      }
    }
  },
);

export const pauseSchema = z.object({ paused: z.boolean() }).strict();

/** A cell of the closure matrix: its receiver and its state. */
export const closureRowsQuery = z.object({
  subscriber,
  state: z.enum(CLOSURE_STATES),
});

/**
 * Which parked outbox rows to release: one message, a sender's rows, rows
 * of an event type, or any of these together; none: every parked row of
 * the sandbox.
 */
export const releaseSchema = z.object({
  messageId: z.string().uuid().optional(),
  service: z.enum(SENDERS).optional(),
  eventType: eventType.optional(),
}).strict();

/** The receiver a path names, or 404. */
function receiverParam(c: Context): SubscriberName {
  const name = subscriber.safeParse(c.req.param("name"));
  if (!name.success) throw new HttpError(404, "no such receiver");
  return name.data;
}

function idParam(c: Context): number {
  const id = Number(c.req.param("id"));
  if (!Number.isSafeInteger(id) || id <= 0) {
    throw new HttpError(404, "no such delivery");
  }
  return id;
}

const query = (c: Context) =>
  Object.fromEntries(new URL(c.req.url).searchParams);

/** A JSON body, or `{}` when the request has none (a bare POST). */
async function optionalJson(c: Context): Promise<unknown> {
  const length = c.req.header("content-length");
  if (!c.req.header("content-type") && (!length || length === "0")) return {};
  return await readJson(c.req.raw);
}

/** A bulk action's answer: a count, the ids changed, or the job. */
function bulkAnswer(c: Context, result: BulkResult, extra = {}) {
  if (result.kind === "dryRun") {
    return c.json({
      count: result.count,
      beyondReplayHorizon: result.beyondReplayHorizon,
      // Only when there are any: the field is new, and its absence says none.
      ...(result.waitsOn.length
        ? { waitsOn: result.waitsOn.map(waitedOnView) }
        : {}),
      ...(result.preview ? { preview: result.preview } : {}),
    });
  }
  if (result.kind === "job") {
    return c.json({ jobId: result.jobId, count: result.count }, 202);
  }
  return c.json({ count: result.ids.length, ids: result.ids, ...extra });
}

/** Runs a bulk action; a redrive beyond the replay horizon is a 409. */
async function runBulk(
  deps: Deps,
  ctx: { sandboxId: string; actor: string },
  req: BulkRequest,
): Promise<BulkResult> {
  try {
    const result = await bulkAction(deps.sql, {
      ...ctx,
      deadLetters: deps.messaging.deadLetters,
      horizonDays: deps.config.REPLAY_HORIZON_DAYS,
    }, req);
    if (result.kind === "job") deps.jobs?.wake();
    if (result.kind !== "dryRun") deps.feed.emitLocal(ctx.sandboxId);
    return result;
  } catch (error) {
    if (error instanceof BeyondReplayHorizon) {
      throw new HttpError(409, error.message);
    }
    throw error;
  }
}

export function consoleRoutes(deps: Deps) {
  const { sql } = deps;
  const horizonDays = deps.config.REPLAY_HORIZON_DAYS;
  /** Tells open pages of this sandbox to refresh. */
  const changed = (sandboxId: string) => deps.feed.emitLocal(sandboxId);
  return {
    overview: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await overviewData(sql, sandboxId));
    },
    outbox: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await outboxAges(sql, sandboxId));
    },
    releaseParked: async (c: Context) => {
      const operator = requireOperator(c);
      const req = parseOr400(releaseSchema, await optionalJson(c));
      const answer = await releaseParkedRows(sql, {
        ...operator,
        outbox: deps.messaging.outbox,
      }, req);
      changed(operator.sandboxId);
      return c.json(answer);
    },
    deliveries: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const q = parseOr400(deliveriesQuery, query(c), "query");
      return c.json({
        counts: await deliveryCounts(sql, sandboxId),
        items: await listDeliveries(sql, sandboxId, q),
      });
    },
    delivery: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const detail = await deliveryDetail(sql, sandboxId, idParam(c));
      if (!detail) throw new HttpError(404, "no such delivery");
      return c.json(detail);
    },
    deadLetters: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const q = parseOr400(deadLetterQuery, query(c), "query");
      return c.json({
        items: await listDeliveries(sql, sandboxId, {
          ...q,
          state: "dead",
          horizonDays,
        }),
      });
    },
    failureGroups: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await failureGroupsData(sql, sandboxId));
    },
    redriveOne: async (c: Context) => {
      const operator = requireOperator(c);
      const id = idParam(c);
      const { force, includeEarlier } = parseOr400(
        forceSchema,
        await optionalJson(c),
      );
      const result = await runBulk(deps, operator, {
        action: "redrive",
        filter: { ids: [id] },
        force,
        includeEarlier,
      });
      // With the letters it waits on, one redrive may be more than a job's
      // worth.
      if (result.kind === "job") return bulkAnswer(c, result);
      if (result.kind !== "now" || result.ids.length === 0) {
        throw new HttpError(404, "no such dead letter");
      }
      return c.json({ count: result.ids.length, ids: result.ids }, 202);
    },
    refuseOne: async (c: Context) => {
      const operator = requireOperator(c);
      const id = idParam(c);
      const { reason } = parseOr400(reasonSchema, await readJson(c.req.raw));
      const result = await runBulk(deps, operator, {
        action: "refuse",
        filter: { ids: [id] },
        reason,
      });
      if (result.kind !== "now" || result.ids.length === 0) {
        throw new HttpError(404, "no such dead letter");
      }
      return c.json({
        count: 1,
        ids: result.ids,
        reason,
        actor: operator.actor,
      });
    },
    redriveMany: async (c: Context) => {
      const operator = requireOperator(c);
      const { dryRun, ratePerSecond, force, includeEarlier, ...filter } =
        parseOr400(bulkSchema, await readJson(c.req.raw));
      const result = await runBulk(deps, operator, {
        action: "redrive",
        filter,
        dryRun,
        ratePerSecond,
        force,
        includeEarlier,
      });
      if (result.kind === "now") {
        return c.json({ count: result.ids.length, ids: result.ids }, 202);
      }
      return bulkAnswer(c, result);
    },
    refuseMany: async (c: Context) => {
      const operator = requireOperator(c);
      const {
        reason,
        dryRun,
        ratePerSecond,
        force: _,
        includeEarlier: __,
        ...filter
      } = parseOr400(bulkRefuseSchema, await readJson(c.req.raw));
      if (!dryRun && !reason) {
        parseOr400(reasonSchema, {});
      }
      const result = await runBulk(deps, operator, {
        action: "refuse",
        filter,
        reason,
        dryRun,
        ratePerSecond,
      });
      return bulkAnswer(c, result, { reason, actor: operator.actor });
    },
    supersede: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const id = idParam(c);
      const { payload, reason } = parseOr400(
        supersedeSchema,
        await readJson(c.req.raw),
      );
      let done;
      try {
        done = await supersedeDeadLetter(
          sql,
          {
            sandboxId,
            actor,
            deadLetters: deps.messaging.deadLetters,
          },
          id,
          payload,
          reason,
        );
      } catch (error) {
        if (error instanceof InvalidPayload) {
          throw new HttpError(
            400,
            `invalid request body: ${error.message}`,
            error.issues,
          );
        }
        // The receiver applied the dead letter after all: a copy would
        // apply it twice. Refusing it is what closes it.
        if (
          error instanceof AlreadyApplied ||
          error instanceof TooManySupersessions
        ) {
          throw new HttpError(409, error.message);
        }
        throw error;
      }
      if (!done) throw new HttpError(404, "no such dead letter");
      changed(sandboxId);
      return c.json({
        messageId: done.messageId,
        deliveryId: done.deliveryId,
        supersedes: id,
      }, 201);
    },
    redriveOutcome: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const { ids } = parseOr400(redriveOutcomeQuery, query(c), "query");
      return c.json(await redriveOutcomeOf(sql, sandboxId, ids));
    },
    job: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const job = await readJob(sql, sandboxId, c.req.param("jobId") ?? "");
      if (!job) throw new HttpError(404, "no such job");
      return c.json(job);
    },
    cancelJob: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const job = await cancelJob(
        sql,
        sandboxId,
        c.req.param("jobId") ?? "",
        actor,
      );
      if (!job) throw new HttpError(404, "no such job");
      changed(sandboxId);
      return c.json(job);
    },
    actions: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const page = parseOr400(actionsQuerySchema, query(c), "query");
      return c.json(await listActions(sql, sandboxId, page));
    },
    search: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const { q } = parseOr400(searchQuery, query(c), "query");
      return c.json({ results: await search(sql, sandboxId, q) });
    },
    closure: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json({
        ...await closure(sql, sandboxId),
        retention: retentionSettings(deps.config),
      });
    },
    closureRows: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const q = parseOr400(closureRowsQuery, query(c), "query");
      return c.json({
        items: await closureRows(sql, sandboxId, q.subscriber, q.state),
      });
    },
    faults: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await readFaults(sql, sandboxId));
    },
    setFaults: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const changes = parseOr400(faultsSchema, await readJson(c.req.raw));
      const faults = await writeFaults(sql, sandboxId, changes, actor);
      changed(sandboxId);
      return c.json(faults);
    },
    receiverPause: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const name = receiverParam(c);
      const paused = await pausedReceivers(sql, sandboxId);
      return c.json(receiverPauseSchema.parse({ name, paused: paused[name] }));
    },
    setReceiverPause: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const name = receiverParam(c);
      const { paused } = parseOr400(pauseSchema, await readJson(c.req.raw));
      const answer = await pauseReceiver(sql, sandboxId, name, paused, actor);
      changed(sandboxId);
      return c.json(answer);
    },
    alerts: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json({
        alerts: await currentAlerts(sql, sandboxId, deps.config),
      });
    },
    receivers: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json({ receivers: await receiverStats(sql, sandboxId) });
    },
    // Shared by every sandbox, read-only (services/console/workers.ts).
    workers: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await workersData(sql, sandboxId));
    },
    orderViolations: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const q = parseOr400(violationsQuery, query(c), "query");
      return c.json(await orderViolations(sql, sandboxId, q));
    },
    board: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json({ cards: await kitchenBoard(sql, sandboxId) });
    },
  };
}
