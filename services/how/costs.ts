/**
 * What a paid order costs, measured from the rows it left in one sandbox:
 * rows per service, bytes stored in the outboxes, the queue and the inboxes
 * (`pg_column_size` of each row, as PostgreSQL stores it), the messages,
 * deliveries and attempts, and the time from the payment webhook to the
 * last of OrderPaid's receivers. Read as the `console` role inside the
 * sandbox, so another sandbox's rows are never counted.
 *
 * A row belongs to a paid order when it names the order (`order_id`), one
 * of the messages the order caused (`message_id`: the outbox rows of orders
 * and billing whose envelope names the order as its aggregate), or one of
 * those messages' deliveries (`delivery_id`).
 */
import type { Sql } from "../../lib/db/connect.ts";
import { type ReadAt, readServices } from "../databases.ts";
import { RECEIVERS, ROUTING, SENDERS } from "../routing.ts";

/** The answer of `GET /api/how-it-works/costs`. */
export interface Costs {
  paidOrders: number;
  /** Null while the sandbox has no paid order to divide by. */
  perPaidOrder: {
    rowsWritten: Record<string, number | null>;
    bytes: {
      outbox: number | null;
      queue: number | null;
      inbox: number | null;
    };
    messages: number | null;
    deliveries: number | null;
    attempts: number | null;
  };
  /** Webhook received to the last receiver's inbox row; null: none yet. */
  latencyMs: { p50: number | null; p95: number | null };
}

type Link = "order" | "message" | "delivery" | "aggregate";
type Store = "outbox" | "queue" | "inbox";

interface Table {
  service: string;
  table: string;
  link: Link;
  column?: string;
  store?: Store;
}

/** The tables a paid order writes to, by service. */
export const COST_TABLES: readonly Table[] = [
  { service: "orders", table: "orders.orders", link: "order", column: "id" },
  { service: "orders", table: "orders.lines", link: "order" },
  { service: "orders", table: "orders.events", link: "order" },
  { service: "orders", table: "orders.commands_seen", link: "order" },
  { service: "billing", table: "billing.payments", link: "order" },
  { service: "billing", table: "billing.stripe_events", link: "order" },
  ...SENDERS.map((s) => ({
    service: s,
    table: `${s}.outbox`,
    link: "aggregate" as const,
    store: "outbox" as const,
  })),
  // Every receiver of a message: its inbox and refusals.
  ...[...RECEIVERS, "orders"].flatMap((s) => [
    {
      service: s,
      table: `${s}.inbox`,
      link: "message" as const,
      store: "inbox" as const,
    },
    { service: s, table: `${s}.refusals`, link: "message" as const },
  ]),
  // The receivers' own effects.
  { service: "kitchen", table: "kitchen.cards", link: "order" },
  { service: "schedule", table: "schedule.bookings", link: "order" },
  { service: "dispatch", table: "dispatch.stops", link: "order" },
  { service: "crm", table: "crm.interactions", link: "order" },
  { service: "customers", table: "customers.history", link: "order" },
  { service: "receipts", table: "receipts.receipts", link: "order" },
  // The queue's bookkeeping. Over JetStream the broker keeps the messages
  // too; what is counted here is what PostgreSQL stores for the queue.
  {
    service: "queue",
    table: "queue.messages",
    link: "message",
    store: "queue",
  },
  {
    service: "queue",
    table: "queue.deliveries",
    link: "message",
    store: "queue",
  },
  {
    service: "queue",
    table: "queue.attempts",
    link: "delivery",
    store: "queue",
  },
  {
    service: "queue",
    table: "queue.actions",
    link: "delivery",
    store: "queue",
  },
  {
    service: "queue",
    table: "queue.mismatches",
    link: "delivery",
    store: "queue",
  },
];

/** The services in the order the page lists them. */
export const COST_SERVICES: readonly string[] = [
  ...new Set(COST_TABLES.map((t) => t.service)),
];

interface Keys {
  orders: string[];
  messages: string[];
  deliveries: string[];
}

/**
 * Rows and bytes of one table that belong to the paid orders, read where
 * the table is: a service's in its database, the queue's in each queue.
 */
async function measure(
  at: ReadAt,
  queues: readonly string[],
  t: Table,
  keys: Keys,
): Promise<{ rows: number; bytes: number }> {
  const total = { rows: 0, bytes: 0 };
  for (const db of t.service === "queue" ? queues : [t.service]) {
    const m = await at(db, async (sql) => {
      const where = t.link === "aggregate"
        ? sql`x.envelope ->> 'aggregateId' = any(${keys.orders}::text[])`
        : t.link === "order"
        ? sql`x.${sql(t.column ?? "order_id")} = any(${keys.orders}::uuid[])`
        : t.link === "message"
        ? sql`x.message_id = any(${keys.messages}::uuid[])`
        : sql`x.delivery_id = any(${keys.deliveries}::bigint[])`;
      const [row] = await sql<{ rows: number; bytes: string }[]>`
        select count(*)::int as rows,
               coalesce(sum(pg_column_size(x.*)), 0)::bigint as bytes
          from ${sql(t.table)} x where ${where}`;
      if (t.store !== "outbox") {
        return { rows: row.rows, bytes: Number(row.bytes) };
      }
      // An outbox row is deleted once its message is published: it was
      // written all the same, once for each message the queue (beside the
      // outbox, in either mode) has from this sender.
      const [sent] = await sql<{ n: number }[]>`
        select count(*)::int as n from queue.messages
         where source = ${t.service}
           and aggregate_id = any(${keys.orders}::text[])`;
      return { rows: row.rows + sent.n, bytes: Number(row.bytes) };
    });
    total.rows += m.rows;
    total.bytes += m.bytes;
  }
  return total;
}

/** The paid orders, their messages and those messages' deliveries. */
async function paidKeys(at: ReadAt, queues: readonly string[]): Promise<Keys> {
  const orders = (await at("orders", (sql) =>
    sql<{ id: string }[]>`
    select id from orders.orders where state = 'paid'`)).map((r) => r.id);
  // What the senders published (the queue's copies), and what they still
  // owe (their outboxes, each beside its sender's queue).
  const messages: string[] = [];
  for (const queue of queues) {
    messages.push(
      ...(await at(queue, (sql) =>
        sql<{ message_id: string }[]>`
        select message_id from queue.messages
         where source = any(${[...SENDERS]}::text[])
           and aggregate_id = any(${orders}::text[])`)).map((r) =>
          r.message_id
        ),
    );
  }
  for (const sender of SENDERS) {
    const rows = await at(sender, (sql) =>
      sql<{ message_id: string }[]>`
      select message_id from ${sql(`${sender}.outbox`)} o
       where envelope ->> 'aggregateId' = any(${orders}::text[])
         and not exists (
           select from queue.messages m where m.message_id = o.message_id)`);
    messages.push(...rows.map((r) => r.message_id));
  }
  const deliveries: string[] = [];
  for (const queue of queues) {
    deliveries.push(
      ...(await at(queue, (sql) =>
        sql<{ id: string }[]>`
        select id::text from queue.deliveries
         where message_id = any(${messages}::uuid[])`)).map((r) => r.id),
    );
  }
  return { orders, messages, deliveries };
}

/**
 * Webhook to all of OrderPaid's receivers, in ms, for each paid order whose
 * OrderPaid every receiver has accepted: from the first Stripe event that
 * billing recorded for the order to the latest of the receivers' inbox rows.
 */
async function latencies(at: ReadAt, orders: string[]) {
  const paid = await at(
    "orders",
    (sql) =>
      sql<{ order_id: string; message_id: string }[]>`
    select aggregate_id as order_id, message_id
      from queue.messages
     where source = 'orders' and type = 'OrderPaid'
       and aggregate_id = any(${orders}::text[])`,
  );
  const webhooks = new Map(
    (await at(
      "billing",
      (sql) =>
        sql<{ order_id: string; webhook_ms: number }[]>`
      select e.order_id::text as order_id,
             (extract(epoch from min(e.received_at)) * 1000)::float8
               as webhook_ms
        from billing.stripe_events e
       where e.order_id = any(${orders}::uuid[]) and e.status = 200
       group by e.order_id`,
    )).map((r) => [r.order_id, r.webhook_ms]),
  );
  const starts = paid.map((p) => ({
    ...p,
    webhook_ms: webhooks.get(p.order_id) ?? null,
  }));
  const paidIds = starts.map((s) => s.message_id);
  const arrived = new Map<string, { n: number; last: number }>();
  const receivers = ROUTING.OrderPaid ?? [];
  for (const receiver of receivers) {
    const rows = await at(
      receiver,
      (sql) =>
        sql<{ message_id: string; at_ms: number }[]>`
      select message_id,
             (extract(epoch from received_at) * 1000)::float8 as at_ms
        from ${sql(`${receiver}.inbox`)}
       where message_id = any(${paidIds}::uuid[]) and status = 200`,
    );
    for (const r of rows) {
      const seen = arrived.get(r.message_id) ?? { n: 0, last: -Infinity };
      arrived.set(r.message_id, {
        n: seen.n + 1,
        last: Math.max(seen.last, r.at_ms),
      });
    }
  }
  const ms: number[] = [];
  for (const s of starts) {
    const all = arrived.get(s.message_id);
    if (s.webhook_ms === null || !all || all.n < receivers.length) continue;
    ms.push(Math.max(0, all.last - s.webhook_ms));
  }
  return ms.sort((a, b) => a - b);
}

/** The q-quantile of sorted `values`, linear between ranks (as percentile_cont). */
export function quantile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const at = (values.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return values[lo] + (values[hi] - values[lo]) * (at - lo);
}

const per = (n: number, paid: number) =>
  paid === 0 ? null : Math.round((n / paid) * 100) / 100;
const ms = (n: number | null) => n === null ? null : Math.round(n * 10) / 10;

/**
 * The cost figures of one sandbox's paid orders.
 *
 * @example
 * ```ts
 * const { paidOrders, perPaidOrder } = await costs(sql, sandboxId);
 * ```
 */
export async function costs(sql: Sql, sandboxId: string): Promise<Costs> {
  return await readServices(
    sql,
    sandboxId,
    async (at, queues) => {
      const keys = await paidKeys(at, queues);
      const paid = keys.orders.length;
      const rows: Record<string, number> = Object.fromEntries(
        COST_SERVICES.map((s) => [s, 0]),
      );
      const bytes: Record<Store, number> = { outbox: 0, queue: 0, inbox: 0 };
      for (const t of COST_TABLES) {
        const m = await measure(at, queues, t, keys);
        rows[t.service] += m.rows;
        if (t.store) bytes[t.store] += m.bytes;
      }
      const counts = { attempts: 0 };
      for (const queue of queues) {
        const [q] = await at(queue, (sql) =>
          sql<{ attempts: number }[]>`
        select coalesce(sum(attempts), 0)::int as attempts
          from queue.deliveries
         where id = any(${keys.deliveries}::bigint[])`);
        counts.attempts += q.attempts;
      }
      const times = await latencies(at, keys.orders);
      return {
        paidOrders: paid,
        perPaidOrder: {
          rowsWritten: Object.fromEntries(
            COST_SERVICES.map((s) => [s, per(rows[s], paid)]),
          ),
          bytes: {
            outbox: per(bytes.outbox, paid),
            queue: per(bytes.queue, paid),
            inbox: per(bytes.inbox, paid),
          },
          // Counted from the queue's copies and the outboxes, which between
          // them hold every message sent on either transport.
          messages: per(keys.messages.length, paid),
          deliveries: per(keys.deliveries.length, paid),
          attempts: per(counts.attempts, paid),
        },
        latencyMs: {
          p50: ms(quantile(times, 0.5)),
          p95: ms(quantile(times, 0.95)),
        },
      };
    },
  );
}
