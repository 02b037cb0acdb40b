/**
 * Bulk jobs: a redrive or refusal of more dead letters than one click
 * should change at once, worked through oldest first at the operator's
 * rate (rows per second) by a job loop in the app or worker process. A
 * job's ids are chosen when it is asked for; the loop takes them a second's
 * worth at a time. A loop holds a lease on the job it works on, so two
 * processes never both run one; a stopped loop hands its lease back and a
 * crashed one's lease runs out, and the job goes on where it was (its
 * `done` counter is written in the transaction that acts on its rows).
 */
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { queuePools, readServices } from "../databases.ts";
import { asService } from "../../lib/db/service.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { uuidv7 } from "../../lib/outbox/envelope.ts";
import {
  type DeadLetters,
  type RedriveOutcome,
  redriveOutcome,
} from "../../lib/ledger/mod.ts";
import { Loop, type TickResult } from "../../lib/wake/loop.ts";
import { logAction } from "./actions.ts";
import { type JobView, jobViewSchema } from "./contracts.ts";
import { mergeOutcomes, outcomeView } from "./redrive_outcome.ts";

export type { JobView } from "./contracts.ts";

/**
 * Job states, as the CHECK of console.bulk_jobs (made by
 * migrations/0005_console_ops.sql, moved by 0022_console_schema.sql):
 * running (moved out by the loop holding its lease, to done, or by an
 * operator's cancel), done and cancelled (final).
 */
export const JOB_STATES = ["running", "done", "cancelled"] as const;
export type JobState = typeof JOB_STATES[number];

/** A job's row as the console shows it (`GET /api/console/jobs/:jobId`). */
// deno-lint-ignore no-explicit-any
function view(r: any): JobView {
  return jobViewSchema.parse({
    jobId: r.id,
    action: r.action,
    state: r.state,
    done: r.done,
    total: r.total,
    changed: r.changed,
    ratePerSecond: r.rate_per_second,
    actor: r.actor,
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
    ...(r.outcome ? { outcome: outcomeView(r.outcome) } : {}),
  });
}

/**
 * One job from its parts. In split mode a job that reaches dead letters in
 * several queues has a row of the same id beside each, worked on by that
 * queue's loop: the job runs while any part does, was cancelled if any part
 * was, and counts what they all count.
 */
function merged(parts: JobView[]): JobView {
  if (parts.length === 1) return parts[0];
  const sum = (key: "done" | "total" | "changed" | "ratePerSecond") =>
    parts.reduce((n, p) => n + p[key], 0);
  const state = parts.some((p) => p.state === "running")
    ? "running"
    : parts.some((p) => p.state === "cancelled")
    ? "cancelled"
    : "done";
  const times = (key: "createdAt" | "finishedAt") =>
    parts.map((p) => p[key] ?? "").sort();
  const outcomes = parts.flatMap((p) => p.outcome ? [p.outcome] : []);
  return {
    ...parts[0],
    state,
    done: sum("done"),
    total: sum("total"),
    changed: sum("changed"),
    ratePerSecond: sum("ratePerSecond"),
    createdAt: times("createdAt")[0],
    finishedAt: state === "running" ? null : times("finishedAt").at(-1)!,
    ...(outcomes.length
      ? {
        outcome: outcomeView(mergeOutcomes(outcomes.map((o) => ({
          ...o,
          deadAgain: o.deadAgain.map((d) => ({ ...d, aggregateId: d.orderId })),
        })))),
      }
      : {}),
  };
}

/** Rows of jobs, their parts merged, in the order each job first appears. */
// deno-lint-ignore no-explicit-any
function mergeRows(rows: any[]): JobView[] {
  const byId = new Map<string, JobView[]>();
  for (const row of rows) {
    const part = view(row);
    byId.set(part.jobId, [...byId.get(part.jobId) ?? [], part]);
  }
  return [...byId.values()].map(merged);
}

const COLUMNS = (sql: TxSql) =>
  sql`id, action, state, done, total, changed, rate_per_second, actor,
      created_at, finished_at`;

/** What a new job does. */
export interface NewJob {
  action: "redrive" | "refuse";
  ids: number[];
  ratePerSecond: number;
  reason?: string;
  force: boolean;
  actor: string;
}

/**
 * Stores a running job in the caller's queue transaction; returns its id,
 * `id` when given (a part of a job across queues).
 */
export async function createJob(
  sql: TxSql,
  sandboxId: string,
  job: NewJob,
  id: string = uuidv7(),
): Promise<string> {
  await sql`
    insert into console.bulk_jobs (id, tenant_id, action, ids, total,
                                   rate_per_second, reason, force, actor)
    values (${id}, ${sandboxId}, ${job.action}, ${job.ids}::bigint[],
            ${job.ids.length}, ${job.ratePerSecond}, ${job.reason ?? null},
            ${job.force}, ${job.actor})`;
  return id;
}

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * One job of the sandbox, or null (also for a malformed id). A redrive
 * job's comes with what became of the rows it redrove so far (`outcome`):
 * the page follows it instead of calling the job a success.
 */
export async function readJob(
  sql: Sql,
  sandboxId: string,
  jobId: string,
): Promise<JobView | null> {
  if (!JOB_ID.test(jobId)) return null;
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(
        queues.map((q) =>
          at(q, async (sql) => {
            const rows = await sql`
              select ${COLUMNS(sql)}, ids[1 : done] as taken
                from console.bulk_jobs where id = ${jobId}`;
            for (const row of rows) {
              if (row.action !== "redrive") continue;
              const outcome: RedriveOutcome = await redriveOutcome(
                sql,
                row.taken.map(Number),
              );
              row.outcome = outcome;
            }
            return rows;
          })
        ),
      ),
  );
  const [job] = mergeRows(parts.flat());
  return job ?? null;
}

/**
 * The sandbox's running jobs and the last few finished, newest first: in
 * split mode, those beside each queue.
 */
export async function listJobs(
  sql: Sql,
  sandboxId: string,
): Promise<JobView[]> {
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(queues.map((q) =>
        at(q, (sql) =>
          sql`
        (select ${COLUMNS(sql)} from console.bulk_jobs where state = 'running')
        union all
        (select ${COLUMNS(sql)} from console.bulk_jobs where state <> 'running'
          order by finished_at desc limit 5)
        order by created_at desc`)
      )),
  );
  const rows = parts.flat();
  if (parts.length > 1) rows.sort((a, b) => +b.created_at - +a.created_at);
  return mergeRows(rows);
}

/**
 * Cancels a running job: what it did stays done, the rest is left as it is.
 * A job that finished already is returned unchanged; null when there is no
 * such job in the sandbox.
 */
export async function cancelJob(
  sql: Sql,
  sandboxId: string,
  jobId: string,
  actor: string,
): Promise<JobView | null> {
  if (!JOB_ID.test(jobId)) return null;
  const parts: JobView[] = [];
  for (const pool of queuePools(sql)) {
    const part = await cancelIn(pool, sandboxId, jobId, actor);
    if (part) parts.push(part);
  }
  return parts.length ? merged(parts) : null;
}

/** {@link cancelJob} in the queue of `sql`'s database. */
async function cancelIn(
  sql: Sql,
  sandboxId: string,
  jobId: string,
  actor: string,
): Promise<JobView | null> {
  return await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    async ({ sql }) => {
      const [cancelled] = await sql`
      update console.bulk_jobs
         set state = 'cancelled', finished_at = now(), lease_owner = null,
             lease_expires_at = null
       where id = ${jobId} and state = 'running'
      returning ${COLUMNS(sql)}`;
      if (cancelled) {
        await logAction(sql, sandboxId, {
          actor,
          action: "cancel",
          target: { jobId },
          count: cancelled.total - cancelled.done,
          jobId,
        });
        return view(cancelled);
      }
      const [row] = await sql`select ${
        COLUMNS(sql)
      } from console.bulk_jobs where id = ${jobId}`;
      return row ? view(row) : null;
    },
  );
}

export interface JobRunnerOptions {
  sql: Sql;
  /** Who holds the lease: the process's worker name. */
  owner: string;
  /** How long a claim holds a job (default 15 s); renewed every round. */
  leaseMs?: number;
  /** Redrives that are not forced leave out dead letters beyond it. */
  horizonDays: number;
  /**
   * How a redrive reaches the carrier: the process's messaging
   * (lib/messaging.ts `deadLetters`). The job's row does not say it; the
   * process that runs the job knows its carrier.
   */
  deadLetters: DeadLetters;
}

interface Claimed {
  id: string;
  tenant_id: string;
  action: "redrive" | "refuse";
  slice: string[];
  reason: string | null;
  force: boolean;
  actor: string;
}

/**
 * One round: claims the due running job that waited longest, acts on its
 * next second's worth of ids in one transaction with its progress, and sets
 * its next round a second later (or finishes it).
 */
export async function runJobsOnce(o: JobRunnerOptions): Promise<TickResult> {
  const leaseMs = o.leaseMs ?? 15_000;
  const [job] = await asService(
    o.sql,
    "queue",
    "workers",
    ({ sql }) =>
      sql<Claimed[]>`
      update console.bulk_jobs j
         set lease_owner = ${o.owner},
             lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
        from (select id from console.bulk_jobs
               where state = 'running' and next_run_at <= now()
                 and (lease_owner is null or lease_owner = ${o.owner}
                      or lease_expires_at < now())
                 -- a sandbox being wiped: its wipe deletes the job
                 and tenant_id <> all((select platform.wiping_tenants())::uuid[])
               order by next_run_at limit 1
               for update skip locked) due
       where j.id = due.id
      returning j.id, j.tenant_id, j.action,
                j.ids[j.done + 1 : j.done + j.rate_per_second] as slice,
                j.reason, j.force, j.actor`,
  );
  if (!job) {
    const [next] = await asService(
      o.sql,
      "queue",
      "workers",
      ({ sql }) =>
        sql<{ at: Date | null }[]>`
        select min(next_run_at) as at from console.bulk_jobs
         where state = 'running'
           and tenant_id <> all((select platform.wiping_tenants())::uuid[])`,
    );
    return { more: false, nextDueAt: next?.at ?? undefined };
  }
  const ids = job.slice.map(Number);
  await asService(
    o.sql,
    "queue",
    { tenantId: job.tenant_id },
    async ({ sql }) => {
      // Fenced by the lease: a job cancelled or taken over meanwhile is
      // left alone.
      const [held] = await sql`
        select 1 from console.bulk_jobs
         where id = ${job.id} and lease_owner = ${o.owner}
           and state = 'running'
         for update`;
      if (!held) return;
      const changed = job.action === "redrive"
        ? await o.deadLetters.redriveIn(sql, { ids }, job.actor, {
          horizonDays: job.force ? undefined : o.horizonDays,
        })
        : await o.deadLetters.refuseIn(sql, { ids }, job.reason!, job.actor);
      await sql`
        update console.bulk_jobs
           set done = done + ${ids.length},
               changed = changed + ${changed.length},
               state = case when done + ${ids.length} >= total
                 then 'done' else 'running' end,
               finished_at = case when done + ${ids.length} >= total
                 then now() end,
               lease_owner = case when done + ${ids.length} >= total
                 then null else lease_owner end,
               lease_expires_at = case when done + ${ids.length} >= total
                 then null else lease_expires_at end,
               next_run_at = now() + interval '1 second'
         where id = ${job.id}`;
    },
  );
  // Another job may be due now; the loop asks again at once.
  return { more: true, touched: [job.tenant_id] };
}

/** Hands back the leases of `owner` (a loop that stops). */
export async function releaseJobs(sql: Sql, owner: string): Promise<void> {
  await asService(sql, "queue", "workers", ({ sql }) =>
    sql`
      update console.bulk_jobs set lease_owner = null, lease_expires_at = null
       where lease_owner = ${owner} and state = 'running'`);
}

/** The job loop of a process: wake() after creating a job. */
export interface JobLoop {
  wake(): void;
  stop(): Promise<void>;
}

/**
 * Starts the job loop of every queue: one with one database, each
 * sender's in split mode, each working on the jobs beside its queue.
 */
export function startJobLoops(
  o: Parameters<typeof startJobLoop>[0],
): JobLoop {
  const loops = queuePools(o.sql).map((sql) => startJobLoop({ ...o, sql }));
  return {
    wake: () => loops.forEach((l) => l.wake()),
    stop: async () => {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}

/**
 * Starts the job loop. It polls every `pollMs` (a job created by another
 * process is found then), and wake() starts a round at once.
 */
export function startJobLoop(
  o: JobRunnerOptions & {
    log: Logger;
    pollMs: number;
    onTouched?: (sandboxIds: string[]) => void;
  },
): JobLoop {
  const loop = new Loop({
    name: "bulk-jobs",
    tick: () => runJobsOnce(o),
    pollMs: o.pollMs,
    log: o.log,
    onTouched: o.onTouched,
  });
  loop.start();
  return {
    wake: () => loop.wake(),
    stop: async () => {
      await loop.stop();
      await releaseJobs(o.sql, o.owner).catch((error) =>
        o.log.warn("bulk_jobs_release_failed", { error })
      );
    },
  };
}
