/**
 * Closure: for every obligation (message x subscriber), what the sender did
 * joined to what the receiver's inbox holds.
 *
 * | state            | sender side                       | receiver's inbox |
 * | ---------------- | --------------------------------- | ---------------- |
 * | owed             | in an outbox, not yet in the queue | (not asked yet) |
 * | inFlight         | delivery pending or in flight     | no row           |
 * | acceptedUnacked  | delivery pending or in flight     | row: the lost-ack case, closes on the next delivery |
 * | closed           | delivery done                     | row              |
 * | dead             | delivery dead                     | either           |
 * | refused          | closed by an operator             | either           |
 * | mismatch         | delivery done                     | NO row: an alarm, the acknowledgement has no effect behind it |
 */
import { z } from "zod";
import type { Fragment, Sql, TxSql } from "../../lib/db/connect.ts";
import { type ReadAt, readServices } from "../databases.ts";
import { ROUTING, SENDERS, SUBSCRIBERS } from "../routing.ts";
import { uncounted } from "../../lib/ledger/mod.ts";
import {
  CLOSURE_STATES,
  type ClosureCounts,
  type ClosureData,
  closureDataSchema,
  type ClosureRow,
  closureRowSchema,
  type ClosureState,
} from "./contracts.ts";

export { CLOSURE_STATES };
export type { ClosureCounts, ClosureState };

const rowsSchema = z.array(closureRowSchema);

const zero = (): ClosureCounts =>
  Object.fromEntries(CLOSURE_STATES.map((s) => [s, 0])) as ClosureCounts;

/** The SQL that names a delivery's closure state, given `accepted`. */
function classify(state: string, accepted: boolean): ClosureState {
  if (state === "done") return accepted ? "closed" : "mismatch";
  if (state === "dead") return "dead";
  if (state === "refused") return "refused";
  return accepted ? "acceptedUnacked" : "inFlight";
}

/**
 * The closure matrix of one sandbox. Done deliveries are read from the
 * audit's counters (lib/ledger/audit.ts) plus the few not counted yet; open,
 * dead and refused ones through partial indexes that hold only those rows.
 * No query reads the history of done deliveries.
 */
export async function closure(
  sql: Sql,
  sandboxId: string,
): Promise<ClosureData> {
  return await readServices(sql, sandboxId, async (at, queues, together) => {
    const bySubscriber: Record<string, ClosureCounts> = Object.fromEntries(
      SUBSCRIBERS.map((s) => [s, zero()]),
    );
    for (const service of SENDERS) {
      // A row the queue has already (published, not yet deleted: the long
      // way publishes, then deletes) is counted by its deliveries, not twice.
      // One look-up by key per outbox row (the LIMIT keeps the planner from
      // hashing every message instead: 190 ms with a million of them, where
      // the outbox held 10,000). A sender's queue is in its own database.
      const owed = await at(
        service,
        (sql) =>
          sql<{ type: string; n: number }[]>`
        select o.type, count(*)::int as n from ${sql(`${service}.outbox`)} o
          left join lateral (
            select 1 as found from queue.messages m
             where m.message_id = o.message_id limit 1) m on true
         where m.found is null
         group by o.type`,
      );
      for (const { type, n } of owed) {
        for (const subscriber of ROUTING[type] ?? []) {
          bySubscriber[subscriber].owed += n;
        }
      }
    }
    for (const queue of queues) {
      // The audit moves done deliveries into the counters: the counters and
      // the deliveries not yet counted are read in one snapshot of the
      // queue's database, so that none is counted twice or missed.
      const apart = SUBSCRIBERS.filter((s) => !together(queue, s));
      const { counted, settled, joined, open } = await at(
        queue,
        async (sql) => {
          // Held deliveries are owed as much as pending ones: in flight.
          const open = (subscriber: string) =>
            sql`(d.state in ('pending', 'in_flight')
              or d.state = 'held' or ${uncounted(sql, subscriber)})`;
          return {
            counted: await sql<
              { subscriber: string; closed: string; mismatch: string }[]
            >`select subscriber, closed, mismatch from queue.closure_counts`,
            settled: await sql<
              { subscriber: string; state: string; n: number }[]
            >`
            select subscriber, 'dead' as state, count(*)::int as n
              from queue.deliveries where state = 'dead' group by subscriber
            union all
            select subscriber, 'refused', count(*)::int from queue.deliveries
             where state = 'refused' group by subscriber`,
            joined: await Promise.all(
              SUBSCRIBERS.filter((s) => together(queue, s)).map(
                async (subscriber) => ({
                  subscriber,
                  rows: await sql<
                    { state: string; accepted: boolean; n: number }[]
                  >`
                  select d.state, (i.message_id is not null) as accepted,
                         count(*)::int as n
                    from queue.deliveries d
                    left join ${sql(`${subscriber}.inbox`)} i
                      on i.message_id = d.message_id
                   where d.subscriber = ${subscriber} and ${open(subscriber)}
                   group by 1, 2`,
                }),
              ),
            ),
            open: await Promise.all(apart.map(async (subscriber) => ({
              subscriber,
              rows: await openDeliveries(sql, subscriber, open(subscriber)),
            }))),
          };
        },
      );
      for (const c of counted) {
        const counts = bySubscriber[c.subscriber];
        if (!counts) continue;
        counts.closed += Number(c.closed);
        counts.mismatch += Number(c.mismatch);
      }
      for (const r of settled) {
        const counts = bySubscriber[r.subscriber];
        if (counts) counts[r.state as "dead" | "refused"] += r.n;
      }
      for (const { subscriber, rows } of joined) {
        for (const r of rows) {
          bySubscriber[subscriber][classify(r.state, r.accepted)] += r.n;
        }
      }
      // An inbox apart from the queue is asked afterwards; a delivery it
      // accepted meanwhile only moves from in flight to accepted.
      for (const { subscriber, rows } of open) {
        const accepted = await inboxStatuses(
          at,
          subscriber,
          rows.map((d) => d.message_id),
        );
        for (const d of rows) {
          const state = classify(d.state, accepted.has(d.message_id));
          bySubscriber[subscriber][state]++;
        }
      }
    }
    const totals = zero();
    for (const counts of Object.values(bySubscriber)) {
      for (const s of CLOSURE_STATES) totals[s] += counts[s];
    }
    return closureDataSchema.parse({ totals, bySubscriber });
  });
}

/** Message ids looked up in an inbox at once, where it is apart. */
const INBOX_PAGE = 1000;

/**
 * The open deliveries of `subscriber` (and the done ones not yet counted:
 * the audit's few seconds of lag), inside the caller's snapshot: for the
 * closure join when the subscriber's inbox is in another database than the
 * queue. One statement, in no order: each part of `open` is then read
 * through its own partial index. Paged in id order, it was read through
 * the primary key instead, every delivery of the history filtered out one
 * by one (0.75 s a page at a million).
 */
async function openDeliveries(
  sql: TxSql,
  subscriber: string,
  open: Fragment,
): Promise<{ message_id: string; state: string }[]> {
  return await sql<{ message_id: string; state: string }[]>`
    select d.message_id, d.state from queue.deliveries d
     where d.subscriber = ${subscriber} and ${open}`;
}

/**
 * The inbox status of each of `ids` that `subscriber`'s inbox holds, asked
 * {@link INBOX_PAGE} ids at a time.
 */
async function inboxStatuses(
  at: ReadAt,
  subscriber: string,
  ids: string[],
): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for (let i = 0; i < ids.length; i += INBOX_PAGE) {
    const page = ids.slice(i, i + INBOX_PAGE);
    const rows = await at(
      subscriber,
      (sql) =>
        sql<{ message_id: string; status: number }[]>`
      select message_id, status from ${sql(`${subscriber}.inbox`)}
       where message_id = any(${page}::uuid[])`,
    );
    for (const r of rows) found.set(r.message_id, r.status);
  }
  return found;
}

/** The obligations behind one cell of the closure matrix. */
export async function closureRows(
  sql: Sql,
  sandboxId: string,
  subscriber: string,
  state: ClosureState,
  limit = 200,
): Promise<ClosureRow[]> {
  if (!(SUBSCRIBERS as readonly string[]).includes(subscriber)) return [];
  return await readServices(
    sql,
    sandboxId,
    async (at, queues, together) => {
      if (state === "owed") {
        const types = Object.entries(ROUTING).filter(([, subs]) =>
          subs.includes(subscriber)
        )
          .map(([type]) => type);
        const out = [];
        for (const service of SENDERS) {
          const rows = await at(service, (sql) =>
            sql<{
              message_id: string;
              type: string;
              order_id: string;
              state: string;
              attempts: number;
              last_error: string | null;
              created_at: Date;
            }[]>`
          select message_id, type, envelope->>'aggregateId' as order_id, state,
                 attempts, last_error, created_at
            from ${sql(`${service}.outbox`)}
           where type = any(${types}::text[])
           order by id limit ${limit}`);
          out.push(...rows.map((r) => ({
            messageId: r.message_id,
            eventType: r.type,
            orderId: r.order_id,
            sender: service,
            deliveryId: null,
            detail:
              `${r.state} in the ${service} outbox, ${r.attempts} failed publish(es)` +
              (r.last_error ? `: ${r.last_error}` : ""),
            at: r.created_at.toISOString(),
          })));
        }
        return rowsSchema.parse(out);
      }
      const rows = [];
      for (const queue of queues) {
        rows.push(
          ...await deliveryRows(at, queue, together(queue, subscriber), {
            sandboxId,
            subscriber,
            state,
            limit,
          }),
        );
      }
      // Newest first across the queues, as within each.
      if (queues.length > 1) rows.sort((a, b) => +b.order_at - +a.order_at);
      return rowsSchema.parse(
        rows.filter((r) => classify(r.state, r.accepted) === state).slice(
          0,
          limit,
        ).map((r) => ({
          messageId: r.message_id,
          eventType: r.type,
          orderId: r.aggregate_id,
          sender: null,
          deliveryId: Number(r.id),
          detail: `delivery ${r.state} after ${r.attempts} attempt(s)` +
            (r.accepted
              ? `; inbox answered ${r.inbox_status}`
              : "; not in the inbox") +
            (r.last_error ? `; last error: ${r.last_error}` : ""),
          at: r.created_at.toISOString(),
        })),
      );
    },
  );
}

interface DeliveryRow {
  id: string | number;
  message_id: string;
  type: string;
  aggregate_id: string;
  state: string;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  order_at: Date;
  accepted: boolean;
  inbox_status: number | null;
}

/**
 * Up to twice `limit` deliveries of one queue that may be in the cell,
 * newest first, each with its inbox's answer: joined in one statement
 * where the inbox shares the queue's database, looked up in the inbox's
 * own where it does not. The caller keeps those the cell holds.
 */
async function deliveryRows(
  at: ReadAt,
  queue: string,
  joined: boolean,
  cell: {
    sandboxId: string;
    subscriber: string;
    state: Exclude<ClosureState, "owed">;
    limit: number;
  },
): Promise<DeliveryRow[]> {
  const { sandboxId, subscriber, state, limit } = cell;
  const rows = await at(queue, (sql) =>
    sql<DeliveryRow[]>`
    select d.id, d.message_id, d.type, d.aggregate_id, d.state, d.attempts,
           d.last_error, d.created_at,
           ${state === "closed" ? sql`m.published_at` : sql`d.created_at`}
             as order_at,
           ${
      joined
        ? sql`(i.message_id is not null) as accepted, i.status as inbox_status`
        : sql`false as accepted, null::int as inbox_status`
    }
      from queue.deliveries d
      ${
      joined
        ? sql`left join ${
          sql(`${subscriber}.inbox`)
        } i on i.message_id = d.message_id`
        : sql``
    }
      ${
      // "closed" reads history: the newest done rows, found through this
      // sandbox's newest messages (queue.messages_by_sandbox,
      // migrations/0003_queue.sql).
      state === "closed"
        ? sql`join queue.messages m on m.message_id = d.message_id
              and m.tenant_id = ${sandboxId}`
        : sql``}
     where d.subscriber = ${subscriber} and ${
      // Each cell reads only rows that can be in it, through the partial
      // indexes; "closed" stops at the limit.
      {
        inFlight: sql`(d.state in ('pending', 'in_flight')
          or d.state = 'held')`,
        acceptedUnacked: sql`(d.state in ('pending', 'in_flight')
          or d.state = 'held')`,
        dead: sql`d.state = 'dead'`,
        refused: sql`d.state = 'refused'`,
        closed: joined
          ? sql`d.state = 'done' and i.message_id is not null`
          : sql`d.state = 'done'`,
        mismatch: sql`(${uncounted(sql, subscriber)}
        or d.state = 'done'
           and d.id in (select delivery_id from queue.mismatches))`,
      }[state]}
     order by ${
      state === "closed" ? sql`m.published_at desc, d.id desc` : sql`d.id desc`
    }
     limit ${limit * 2}`);
  if (joined) return rows;
  const statuses = await inboxStatuses(
    at,
    subscriber,
    rows.map((r) => r.message_id),
  );
  return rows.map((r) => ({
    ...r,
    accepted: statuses.has(r.message_id),
    inbox_status: statuses.get(r.message_id) ?? null,
  }));
}
