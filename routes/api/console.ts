/**
 * The console's JSON API (the twin of every console page). Signed-in
 * operators only: a guest or a visitor without a session gets 401. Every
 * call acts inside the caller's sandbox; another sandbox's ids are 404.
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../lib/http/errors.ts";
import { parseOr400, readJson, text } from "../../lib/http/validate.ts";
import { DELIVERY_STATES, redrive, refuse } from "../../lib/queue/mod.ts";
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
import { kitchenBoard } from "../../services/console/board.ts";
import { readFaults, writeFaults } from "../../services/console/faults.ts";
import { FAULT_NAMES } from "../../services/faults.ts";
import {
  pausedReceivers,
  pauseReceiver,
} from "../../services/console/pauses.ts";
import { type SubscriberName, SUBSCRIBERS } from "../../services/routing.ts";
import { payloads } from "../../services/events.ts";
import { currentAlerts } from "../../services/console/alerts.ts";
import { receiverStats } from "../../services/console/receivers.ts";
import { overviewData } from "../../services/console/overview.ts";
import { orderViolations } from "../../services/console/violations.ts";

/** The signed-in operator (a named session), or 401. */
export function requireOperator(c: Context) {
  const session = c.get("session");
  if (!session?.name) throw new HttpError(401, "sign in to use the console");
  return { sandboxId: session.sandboxId, actor: session.name };
}

const subscriber = z.enum(SUBSCRIBERS);
const eventType = z.enum(Object.keys(payloads) as [string, ...string[]]);
const isoTime = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

export const deadLetterQuery = z.object({
  subscriber: subscriber.optional(),
  eventType: eventType.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
});

const deliveriesQuery = deadLetterQuery.extend({
  state: z.enum([...DELIVERY_STATES, "retrying"]).optional(),
  orderId: z.string().uuid().optional(),
});

export const bulkSchema = z.object({
  ids: z.array(z.number().int().positive()).max(1000).optional(),
  subscriber: subscriber.optional(),
  eventType: eventType.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
}).strict();

export const reasonSchema = z.object({
  reason: text().trim().min(1, "a reason is required").max(
    500,
    "at most 500 characters",
  ),
}).strict();

const bulkRefuseSchema = bulkSchema.extend(reasonSchema.shape).strict();

const violationsQuery = z.object({ subscriber: subscriber.optional() })
  .strict();

const faultsSchema = z.record(z.string(), z.boolean()).superRefine(
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

export function consoleRoutes(deps: Deps) {
  const { sql } = deps;
  // Over JetStream a redrive also gives the broker the message again.
  const redriveOptions = { republish: deps.config.QUEUE === "jetstream" };
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
        items: await listDeliveries(sql, sandboxId, { ...q, state: "dead" }),
      });
    },
    redriveOne: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const ids = await redrive(
        sql,
        sandboxId,
        { ids: [idParam(c)] },
        actor,
        redriveOptions,
      );
      if (ids.length === 0) throw new HttpError(404, "no such dead letter");
      changed(sandboxId);
      return c.json({ count: 1, ids }, 202);
    },
    refuseOne: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const id = idParam(c);
      const { reason } = parseOr400(reasonSchema, await readJson(c.req.raw));
      const ids = await refuse(sql, sandboxId, { ids: [id] }, reason, actor);
      if (ids.length === 0) throw new HttpError(404, "no such dead letter");
      changed(sandboxId);
      return c.json({ count: 1, ids, reason, actor });
    },
    redriveMany: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const filter = parseOr400(bulkSchema, await readJson(c.req.raw));
      const ids = await redrive(sql, sandboxId, filter, actor, redriveOptions);
      changed(sandboxId);
      return c.json({ count: ids.length, ids }, 202);
    },
    refuseMany: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const { reason, ...filter } = parseOr400(
        bulkRefuseSchema,
        await readJson(c.req.raw),
      );
      const ids = await refuse(sql, sandboxId, filter, reason, actor);
      changed(sandboxId);
      return c.json({ count: ids.length, ids, reason, actor });
    },
    closure: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await closure(sql, sandboxId));
    },
    closureRows: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const q = parseOr400(
        z.object({ subscriber, state: z.enum(CLOSURE_STATES) }),
        query(c),
        "query",
      );
      return c.json({
        items: await closureRows(sql, sandboxId, q.subscriber, q.state),
      });
    },
    faults: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await readFaults(sql, sandboxId));
    },
    setFaults: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const changes = parseOr400(faultsSchema, await readJson(c.req.raw));
      const faults = await writeFaults(sql, sandboxId, changes);
      changed(sandboxId);
      return c.json(faults);
    },
    receiverPause: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      const name = receiverParam(c);
      const paused = await pausedReceivers(sql, sandboxId);
      return c.json({ name, paused: paused[name] });
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
