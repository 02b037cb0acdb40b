/**
 * The operator log: one row for every operator action on dead letters (a
 * redrive or refusal of one or many, a bulk job started or cancelled, a
 * supersede), saying who, when, what and how many. Written in the same
 * transaction as the action, so an action without its row cannot commit.
 * A receiver paused or resumed is logged in queue.pause_actions
 * (lib/queue/pauses.ts, in the pause's own transaction); the log reads both.
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { type OperatorAction, operatorActionSchema } from "./contracts.ts";

export type { OperatorAction } from "./contracts.ts";
export type OperatorActionKind = OperatorAction["action"];
/** What queue.operator_actions keeps (pauses are kept beside it). */
type DeadLetterAction = Exclude<OperatorActionKind, "pause" | "resume">;

const actionsSchema = z.array(operatorActionSchema);

/** Logs an action inside the caller's queue transaction. */
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
    insert into queue.operator_actions (sandbox_id, actor, action, target,
                                        count, job_id)
    values (${sandboxId}, ${row.actor}, ${row.action},
            ${sql.json(row.target as never)}, ${row.count},
            ${row.jobId ?? null})`;
}

/** The sandbox's newest actions first, pauses and resumes among them. */
export async function listActions(
  sql: Sql,
  sandboxId: string,
  limit = 50,
): Promise<OperatorAction[]> {
  const rows = await asService(sql, "console", { sandboxId }, ({ sql }) =>
    sql`
      select * from (
        (select at, id, actor, action, target, count, job_id
           from queue.operator_actions order by at desc, id desc
          limit ${limit})
        union all
        (select at, id, actor, action,
                jsonb_build_object('subscriber', subscriber), 1, null::uuid
           from queue.pause_actions order by at desc, id desc
          limit ${limit})
      ) a order by at desc, id desc
      limit ${limit}`);
  return actionsSchema.parse(rows.map((r) => ({
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    target: r.target,
    count: r.count,
    jobId: r.job_id,
  })));
}
