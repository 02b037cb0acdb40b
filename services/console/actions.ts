/**
 * The operator log: one row for every operator action on dead letters (a
 * redrive or refusal of one or many, a bulk job started or cancelled, a
 * supersede) and on parked outbox rows (a release), saying who, when, what
 * and how many. Written in the same transaction as the action, so an action
 * without its row cannot commit. The log is the console's own table, in
 * the console's schema beside the queue it acts on (split mode: beside each
 * sender's queue).
 * A receiver paused or resumed is logged in queue.pause_actions
 * (lib/ledger/pauses.ts, in the pause's own transaction); the log reads both.
 * An alert acknowledged (services/console/alert_episodes.ts) and a fault
 * switch flipped are rows here too.
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { type OperatorAction, operatorActionSchema } from "./contracts.ts";

export type { OperatorAction } from "./contracts.ts";
export type OperatorActionKind = OperatorAction["action"];
/** What console.operator_actions keeps (pauses are kept beside it). */
type DeadLetterAction = Exclude<OperatorActionKind, "pause" | "resume">;

const actionsSchema = z.array(operatorActionSchema);

/**
 * Logs an action inside the caller's transaction: the queue's, or for a
 * release the relay's (migrations/0013_release_parked.sql).
 */
export async function logAction(
  sql: TxSql,
  sandboxId: string,
  row: {
    actor: string;
    action: DeadLetterAction;
    target: Record<string, unknown>;
    count: number;
    jobId?: string;
  },
): Promise<void> {
  await sql`
    insert into console.operator_actions (tenant_id, actor, action, target,
                                          count, job_id)
    values (${sandboxId}, ${row.actor}, ${row.action},
            ${sql.json(row.target as never)}, ${row.count},
            ${row.jobId ?? null})`;
}

/** Entries on one page of the log, unless the caller asks for another number. */
export const ACTIONS_PAGE = 50;
/** The most entries one page may ask for. */
export const ACTIONS_PAGE_MAX = 200;

/**
 * A place in the log, as a page's `next` gives it: the entry's time in
 * microseconds since 1970, its table (`o` for console.operator_actions, `p`
 * for queue.pause_actions) and its id there. The lengths keep both numbers
 * inside a bigint (up to the year 2286 for the time).
 */
export const actionsCursorSchema = z.string().regex(
  /^\d{1,16}\.[op]\.\d{1,18}$/,
  "a place in the operator log, as a page's `next` gives it",
);

/** `?before=` and `?limit=` of the log's page and of its twin. */
export const actionsQuerySchema = z.strictObject({
  before: actionsCursorSchema.optional(),
  limit: z.string()
    .regex(/^\d{1,3}$/, `a whole number from 1 to ${ACTIONS_PAGE_MAX}`)
    .transform(Number)
    .pipe(
      z.number().int().min(1, "at least 1")
        .max(ACTIONS_PAGE_MAX, `at most ${ACTIONS_PAGE_MAX}`),
    )
    .optional(),
});

/** One page of the log, and where the next (older) page starts. */
export interface ActionsPage {
  items: OperatorAction[];
  /** The cursor of this page's last entry, or null when nothing is older. */
  next: string | null;
}

/**
 * The sandbox's actions, newest first, pauses and resumes among them: a
 * page of `limit` entries after the cursor `before` (from the newest
 * without one). Entries are ordered by time, then table, then id, so that
 * two written in the same microsecond still have one place each and a page
 * never repeats or skips one.
 */
export async function listActions(
  sql: Sql,
  sandboxId: string,
  options: { limit?: number; before?: string } = {},
): Promise<ActionsPage> {
  const limit = options.limit ?? ACTIONS_PAGE;
  const before = options.before === undefined
    ? null
    : parseCursor(options.before);
  // Each queue's newest entries after the cursor (split mode: each
  // sender's; a pause is set in every queue, so its entries are read from
  // the first alone), merged in the log's order.
  const rows = await readServices(sql, sandboxId, async (at, queues) => {
    const parts = await Promise.all(
      queues.map((queue, i) =>
        at(queue, (sql) => {
          // Older than the cursor, for the rows of table `src`; the bound on
          // `at` alone lets the sandbox's index on (tenant_id, at) narrow the
          // scan.
          const time = before &&
            sql`(timestamptz 'epoch' + ${before.us}::bigint * interval '1 microsecond')`;
          const older = (src: "o" | "p") =>
            before
              ? sql`at <= ${time} and (at, ${src}::text, id)
                  < (${time}, ${before.src}::text, ${before.id}::bigint)`
              : sql`true`;
          const pauses = i === 0
            ? sql`union all
          (select at, 'p', id, actor, action,
                  jsonb_build_object('subscriber', subscriber), 1, null::uuid
             from queue.pause_actions where ${older("p")}
            order by at desc, id desc limit ${limit + 1})`
            : sql``;
          return sql`
        select *, (extract(epoch from at) * 1000000)::bigint::text || '.' ||
                  src || '.' || id as cursor
          from (
            (select at, 'o' as src, id, actor, action, target, count, job_id
               from console.operator_actions where ${older("o")}
              order by at desc, id desc limit ${limit + 1})
            ${pauses}
          ) a
         order by at desc, src desc, id desc
         limit ${limit + 1}`;
        })
      ),
    );
    const all = parts.flat();
    if (parts.length > 1) {
      // By the cursor's microseconds: a Date keeps milliseconds only.
      const us = (r: { cursor?: unknown }) =>
        BigInt(String(r.cursor).split(".")[0]);
      all.sort((a, b) =>
        us(b) > us(a)
          ? 1
          : us(b) < us(a)
          ? -1
          : b.src < a.src
          ? -1
          : b.src > a.src
          ? 1
          : Number(b.id) - Number(a.id)
      );
    }
    return all.slice(0, limit + 1);
  });
  const page = rows.slice(0, limit);
  const names = await groupNames(
    sql,
    sandboxId,
    page.map((r) => r.target?.group).filter((g) => typeof g === "string"),
  );
  return {
    items: actionsSchema.parse(page.map((r) => ({
      at: r.at.toISOString(),
      actor: r.actor,
      action: r.action,
      target: r.target,
      count: r.count,
      jobId: r.job_id,
      ...(names.has(r.target?.group)
        ? { groupName: names.get(r.target.group) }
        : {}),
    }))),
    next: rows.length > limit ? page[page.length - 1].cursor : null,
  };
}

type GroupName = NonNullable<OperatorAction["groupName"]>;

/**
 * The failure groups behind `keys`, by receiver, type and pattern. A key is
 * a hash (queue.failure_group), so it is matched against the sandbox's
 * deliveries that failed, whatever their state now: a group that was
 * redriven or refused has left the dead letters but keeps its name here.
 */
async function groupNames(
  sql: Sql,
  sandboxId: string,
  keys: string[],
): Promise<Map<string, GroupName>> {
  const names = new Map<string, GroupName>();
  if (keys.length === 0) return names;
  const unique = [...new Set(keys)];
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(queues.map((queue) =>
        at(queue, (sql) =>
          sql<{
            key: string;
            subscriber: string;
            type: string;
            pattern: string;
          }[]>`
          select distinct on (key) key, subscriber, type, pattern
            from (select queue.failure_group(subscriber, type, last_error)
                           as key,
                         subscriber, type,
                         queue.error_pattern(last_error) as pattern
                    from queue.deliveries
                   where last_error is not null) d
           where key = any(${unique}::text[])`)
      )),
  );
  for (const r of parts.flat()) {
    names.set(r.key, {
      subscriber: r.subscriber,
      eventType: r.type,
      pattern: r.pattern,
    });
  }
  return names;
}

/** A cursor's parts. */
function parseCursor(cursor: string) {
  const [us, src, id] = actionsCursorSchema.parse(cursor).split(".");
  return { us, src, id };
}
