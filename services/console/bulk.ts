/**
 * An operator's action on dead letters, one or many, with its safety
 * rails: a dry run counts and changes nothing; a redrive of a dead letter
 * beyond the receivers' replay horizon is refused unless forced; more than
 * {@link JOB_THRESHOLD} rows become a job (services/console/jobs.ts) at the
 * operator's rate; and every action leaves its row in the operator log.
 * A redrive's dry run names the dead letters its selection waits on (the
 * earlier messages of the same order to the same receiver, dead too and
 * left out), and `includeEarlier` takes them along: without them, the
 * receiver answers "not yet" and the redriven messages die again.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService, isRouted, poolOf } from "../../lib/db/service.ts";
import { queueOfDelivery } from "../databases.ts";
import { SENDERS } from "../routing.ts";
import {
  type DeadLetterFilter,
  type EarlierDeadLetter,
  earlierDeadLetters,
  inSendingOrder,
  matchDeadLetters,
  type MatchedDeadLetters,
} from "../../lib/ledger/mod.ts";
import type { TxSql } from "../../lib/db/connect.ts";
import type { OperatorDeadLetters, RedrivePreview } from "../../lib/mod.ts";
import { logAction } from "./actions.ts";
import { createJob } from "./jobs.ts";
import { uuidv7 } from "../../lib/outbox/envelope.ts";

/**
 * More rows than this run as a job: a hundred rows are one statement of a
 * few milliseconds, and a thousand at once would make every receiver take
 * them in one burst.
 */
export const JOB_THRESHOLD = 100;

/** A job's rate when the operator names none, in rows per second. */
export const DEFAULT_RATE = 50;

export interface BulkRequest {
  action: "redrive" | "refuse";
  filter: DeadLetterFilter;
  /** Required to refuse. */
  reason?: string;
  dryRun?: boolean;
  /** Redrive dead letters beyond the replay horizon too. */
  force?: boolean;
  /** Redrive the dead letters the selection waits on too. */
  includeEarlier?: boolean;
  ratePerSecond?: number;
}

export interface BulkContext {
  sandboxId: string;
  actor: string;
  /**
   * How a redrive reaches the carrier, and what it would do at each
   * receiver (lib/messaging.ts `deadLetters`).
   */
  deadLetters: OperatorDeadLetters;
  /** The receivers' replay horizon (REPLAY_HORIZON_DAYS). */
  horizonDays: number;
}

export type BulkResult =
  | {
    kind: "dryRun";
    count: number;
    beyondReplayHorizon: number;
    /** A redrive's: the dead letters the selection waits on. */
    waitsOn: EarlierDeadLetter[];
    /** The dead letters matched, oldest first. */
    ids: number[];
    /**
     * A redrive's: what each of the first {@link PREVIEW_MAX} would do at
     * its receiver, found by applying it in a transaction rolled back.
     */
    preview?: RedrivePreview[];
  }
  | { kind: "now"; ids: number[] }
  | { kind: "job"; jobId: string; count: number };

/** A redrive that reaches messages the receivers may no longer remember. */
export class BeyondReplayHorizon extends Error {
  override name = "BeyondReplayHorizon";
  constructor(
    readonly beyond: number,
    readonly total: number,
    readonly days: number,
  ) {
    super(
      `${beyond} of the ${total} dead letters ${
        beyond === 1 ? "is a message" : "are messages"
      } older than the receivers' replay horizon of ${days} days: a receiver ` +
        `refuses a message that old unless it remembers it, and may no ` +
        `longer remember one it applied. Send "force": true to redrive anyway.`,
    );
  }
}

/**
 * Runs (or counts) one operator action on the matching dead letters. In
 * split mode each queue is acted on in its own database: the dead letters
 * a filter names by id in the queue each id belongs to, the others in
 * every queue. A dry run across them all comes first, so that a refusal
 * (beyond the replay horizon, too many at once) changes nothing anywhere.
 */
export async function bulkAction(
  sql: Sql,
  ctx: BulkContext,
  req: BulkRequest,
): Promise<BulkResult> {
  if (req.action === "refuse" && !req.reason?.trim()) {
    throw new TypeError("a refusal needs a reason");
  }
  if (!isRouted(sql)) {
    const result = await bulkActionIn(sql, ctx, req);
    return req.dryRun ? await withPreview(ctx, req, result, [sql]) : result;
  }
  const parts = SENDERS.map((sender) => ({
    pool: poolOf(sql, sender),
    filter: req.filter.ids === undefined ? req.filter : {
      ...req.filter,
      ids: req.filter.ids.filter((id) => queueOfDelivery(id) === sender),
    },
  })).filter((p) => p.filter.ids === undefined || p.filter.ids.length > 0);
  const counted: BulkResult[] = [];
  for (const { pool, filter } of parts) {
    counted.push(
      await bulkActionIn(pool, ctx, { ...req, filter, dryRun: true }),
    );
  }
  const total = (key: "count" | "beyondReplayHorizon") =>
    counted.reduce((n, c) => n + (c.kind === "dryRun" ? c[key] : 0), 0);
  const count = total("count");
  if (req.dryRun) {
    // Each queue's ids, previewed against its own ledger.
    const previews: RedrivePreview[] = [];
    for (const [i, { pool }] of parts.entries()) {
      const part = await withPreview(ctx, req, counted[i], [pool]);
      if (part.kind === "dryRun") previews.push(...part.preview ?? []);
    }
    return {
      kind: "dryRun",
      count,
      beyondReplayHorizon: total("beyondReplayHorizon"),
      waitsOn: counted.flatMap((c) => c.kind === "dryRun" ? c.waitsOn : []),
      ids: counted.flatMap((c) => c.kind === "dryRun" ? c.ids : []),
      ...(req.action === "redrive"
        ? { preview: previews.slice(0, PREVIEW_MAX) }
        : {}),
    };
  }
  const beyond = total("beyondReplayHorizon");
  if (req.action === "redrive" && !req.force && beyond > 0) {
    throw new BeyondReplayHorizon(beyond, count, ctx.horizonDays);
  }
  // Only the queues that matched act and log; when none did, the first
  // logs the action that found nothing, as one database does.
  const matched = parts.filter((_, i) => {
    const c = counted[i];
    return c.kind === "dryRun" && c.count > 0;
  });
  if (count > JOB_THRESHOLD) {
    // One job, a part beside each queue that matched, under one id; the
    // operator's rate is shared among the parts.
    const jobId = uuidv7();
    const rate = req.ratePerSecond ?? DEFAULT_RATE;
    for (const { pool, filter } of matched) {
      await bulkActionIn(pool, ctx, { ...req, filter }, {
        id: jobId,
        ratePerSecond: Math.max(1, Math.floor(rate / matched.length)),
      });
    }
    return { kind: "job", jobId, count };
  }
  const ids: number[] = [];
  for (const { pool, filter } of matched.length ? matched : parts.slice(0, 1)) {
    const done = await bulkActionIn(pool, ctx, { ...req, filter });
    if (done.kind === "now") ids.push(...done.ids);
  }
  return { kind: "now", ids };
}

/**
 * A redrive's dry run previews at most this many dead letters: each holds
 * a transaction of its receiver's for as long as its apply runs (tens of
 * milliseconds), and the console shows the first page of them.
 */
export const PREVIEW_MAX = 50;

/**
 * `result`, a redrive's dry run, with what its first dead letters would
 * do at their receivers (`pools[0]` is the ledger that holds them). Other
 * results come back as they are.
 */
async function withPreview(
  ctx: BulkContext,
  req: BulkRequest,
  result: BulkResult,
  [ledger]: Sql[],
): Promise<BulkResult> {
  if (result.kind !== "dryRun" || req.action !== "redrive") return result;
  const preview = await ctx.deadLetters.preview(
    ledger,
    ctx.sandboxId,
    result.ids.slice(0, PREVIEW_MAX),
  );
  return { ...result, preview };
}

/**
 * {@link bulkAction} on the queue in the database of `sql`; as a part of
 * the job `asPart` names, whatever the count, when it is given.
 */
async function bulkActionIn(
  sql: Sql,
  ctx: BulkContext,
  req: BulkRequest,
  asPart?: { id: string; ratePerSecond: number },
): Promise<BulkResult> {
  const { sandboxId, actor } = ctx;
  return await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    async ({ sql }) => {
      const { matched, waitsOn } = await select(sql, req, ctx.horizonDays);
      const count = matched.ids.length;
      if (req.dryRun) {
        return {
          kind: "dryRun",
          count,
          beyondReplayHorizon: matched.beyondHorizon.length,
          waitsOn,
          ids: matched.ids,
        };
      }
      const force = req.force ?? false;
      if (req.action === "redrive" && !force && matched.beyondHorizon.length) {
        throw new BeyondReplayHorizon(
          matched.beyondHorizon.length,
          count,
          ctx.horizonDays,
        );
      }
      const target = {
        ...req.filter,
        ...(force ? { force } : {}),
        ...(req.includeEarlier ? { includeEarlier: true } : {}),
      };
      if (count > JOB_THRESHOLD || asPart) {
        const jobId = await createJob(sql, sandboxId, {
          action: req.action,
          // A job sends a slice a second: each order's messages to one
          // receiver in the order they were written, so that no slice
          // sends one before the message it waits on.
          ids: req.action === "redrive"
            ? await inSendingOrder(sql, matched.ids)
            : matched.ids,
          ratePerSecond: asPart?.ratePerSecond ?? req.ratePerSecond ??
            DEFAULT_RATE,
          reason: req.reason,
          force,
          actor,
        }, asPart?.id);
        await logAction(sql, sandboxId, {
          actor,
          action: req.action,
          target,
          count,
          jobId,
        });
        return { kind: "job", jobId, count };
      }
      const ids = req.action === "redrive"
        ? await ctx.deadLetters.redriveIn(sql, { ids: matched.ids }, actor)
        : await ctx.deadLetters.refuseIn(
          sql,
          { ids: matched.ids },
          req.reason!,
          actor,
        );
      await logAction(sql, sandboxId, {
        actor,
        action: req.action,
        target,
        count: ids.length,
      });
      return { kind: "now", ids };
    },
  );
}

/**
 * The dead letters a request acts on and, for a redrive, those its
 * selection waits on; with `includeEarlier`, those are among the matched.
 */
async function select(
  sql: TxSql,
  req: BulkRequest,
  horizonDays: number,
): Promise<{ matched: MatchedDeadLetters; waitsOn: EarlierDeadLetter[] }> {
  const matched = await matchDeadLetters(sql, req.filter, horizonDays);
  if (req.action !== "redrive") return { matched, waitsOn: [] };
  const waitsOn = await earlierDeadLetters(sql, matched.ids);
  if (!req.includeEarlier || waitsOn.length === 0) return { matched, waitsOn };
  const ids = [...matched.ids, ...waitsOn.map((d) => d.id)];
  return {
    matched: await matchDeadLetters(sql, { ids }, horizonDays),
    waitsOn,
  };
}
