/**
 * Helpers of the console operations tests: many dead letters at once (copies
 * of a real one, each under a message id of its own), a bulk job's
 * progress read through the API, and the rows of every queue.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { uuidv7 } from "../lib/outbox/envelope.ts";
import { queuePools } from "../services/databases.ts";
import { type Client, eventually } from "./_app.ts";

/**
 * The rows `query` finds in every queue, one queue after the other: each
 * sender's in split mode, the one database's otherwise (so that no row is
 * read twice). `sql` is the bakery's own pool (`t.sql`).
 */
export async function inEveryQueue<T>(
  sql: Sql,
  query: (sql: Sql) => PromiseLike<readonly T[]>,
): Promise<T[]> {
  const rows: T[] = [];
  for (const pool of queuePools(sql)) rows.push(...await query(pool));
  return rows;
}

/** The counts (`n`) that `query` finds in every queue, added up. */
export async function countInEveryQueue(
  sql: Sql,
  query: (sql: Sql) => PromiseLike<readonly { n: number }[]>,
): Promise<number> {
  const counts = await inEveryQueue(sql, query);
  return counts.reduce((sum, { n }) => sum + n, 0);
}

/**
 * Adds `n` dead letters like delivery `id` (same subscriber, type, order and
 * last error), each with a message of its own; `occurredAt` dates their
 * envelopes. Returns their ids, oldest first.
 */
export async function copyDeadLetter(
  sql: Sql,
  id: number,
  n: number,
  occurredAt?: Date,
): Promise<number[]> {
  const [d] = await sql<
    { message_id: string; envelope: Record<string, unknown> }[]
  >`
    select d.message_id, m.envelope from queue.deliveries d
      join queue.messages m using (message_id) where d.id = ${id}`;
  assert.ok(d, `no delivery ${id}`);
  const ids = Array.from({ length: n }, () => uuidv7());
  const envelopes = ids.map((messageId) => ({
    ...d.envelope,
    messageId,
    ...(occurredAt ? { occurredAt: occurredAt.toISOString() } : {}),
  }));
  const rows = await sql<{ id: string }[]>`
    with m as (
      insert into queue.messages (message_id, tenant_id, source, type,
                                  aggregate_id, envelope, published_at)
      select (e->>'messageId')::uuid, o.tenant_id, o.source, o.type,
             o.aggregate_id, e, o.published_at
        from queue.messages o,
             jsonb_array_elements(${sql.json(envelopes as never)}) as e
       where o.message_id = ${d.message_id}
      returning message_id
    )
    insert into queue.deliveries (tenant_id, message_id, subscriber, type,
                                  aggregate_id, state, attempts, last_status,
                                  last_error, dead_at)
    select o.tenant_id, m.message_id, o.subscriber, o.type, o.aggregate_id,
           'dead', o.attempts, o.last_status, o.last_error,
           o.dead_at + interval '1 millisecond'
      from queue.deliveries o, m where o.id = ${id}
    order by m.message_id
    returning id`;
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

export interface JobJson {
  jobId: string;
  state: "running" | "done" | "cancelled";
  done: number;
  total: number;
  changed: number;
}

/** `GET /api/console/jobs/:jobId`, which must answer 200. */
export async function jobOf(client: Client, jobId: string): Promise<JobJson> {
  const { status, body } = await client.json<JobJson>(
    "GET",
    `/api/console/jobs/${jobId}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

/** Waits until the job is in `state`; returns it. */
export async function jobSettles(
  client: Client,
  jobId: string,
  state: JobJson["state"],
  timeoutMs = 30_000,
): Promise<JobJson> {
  let job: JobJson | undefined;
  await eventually(`job ${jobId} ${state}`, async () => {
    job = await jobOf(client, jobId);
    return job.state === state;
  }, timeoutMs);
  return job!;
}
