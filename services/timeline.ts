/**
 * The read side of one order, for the visitor's order page and the console:
 * its state and lines, its events, every message it caused (outbox rows of
 * orders and billing), every delivery with its attempts, what each
 * receiver's inbox accepted, and the receipt. Read as the `console` role,
 * which may read every schema and write none, inside the caller's sandbox.
 */
import type { Sql } from "../lib/db/connect.ts";
import { type ReadAt, readServices } from "./databases.ts";
import { RECEIVERS } from "./routing.ts";

export interface OrderView {
  orderId: string;
  state: string;
  version: number;
  totalCents: number;
  customer: { name: string; email: string };
  fulfilment: string;
  day: string;
  paymentRef: string | null;
  createdAt: string;
  lines: { sku: string; name: string; qty: number; unitCents: number }[];
  events: {
    type: string;
    version: number;
    at: string;
    messageId: string | null;
  }[];
  messages: {
    messageId: string;
    service: string;
    eventType: string;
    state: string;
    attempts: number;
    lastError: string | null;
    createdAt: string;
    publishedAt: string | null;
    /** The trace the message belongs to, where tracing was on. */
    traceId: string | null;
  }[];
  deliveries: {
    id: number;
    messageId: string;
    eventType: string;
    subscriber: string;
    state: string;
    attempts: number;
    lastStatus: number | null;
    lastError: string | null;
    nextAttemptAt: string | null;
    accepted: { status: number; at: string; outcome: unknown } | null;
  }[];
  receipt: {
    number: string;
    totalCents: number;
    paymentRef: string;
    issuedAt: string;
  } | null;
  kitchenCard: { state: string; version: number } | null;
}

const iso = (d: Date | null) => d ? d.toISOString() : null;

/**
 * What `sender` wrote for the order: what it still owes is in its outbox;
 * what it published, in the queue's copy (the outbox row goes when the copy
 * is stored, or, the long way, just after: then the copy is what counts).
 * Each sender's queue is in its own database in split mode, so each is
 * read there.
 */
function sent(at: ReadAt, sender: "orders" | "billing", orderId: string) {
  return at(sender, (sql) => {
    const copied = sql`not exists (
      select from queue.messages m where m.message_id = o.message_id)`;
    const owed = sender === "orders"
      ? sql`message_id in (select message_id from orders.events
                            where order_id = ${orderId})`
      : sql`envelope->>'aggregateId' = ${orderId}`;
    return sql`
      select ${sender} as service, message_id, type, state, attempts,
             last_error, created_at, null::timestamptz as published_at,
             split_part(envelope->>'traceparent', '-', 2) as trace_id
        from ${sql(`${sender}.outbox`)} o
       where ${owed} and ${copied}
      union all
      select source, message_id, type, 'published', 0, null,
             (envelope->>'occurredAt')::timestamptz, published_at,
             split_part(envelope->>'traceparent', '-', 2)
        from queue.messages
       where aggregate_id = ${orderId} and source = ${sender}`;
  });
}

/** The deliveries of what `sender` published for the order. */
function delivered(
  at: ReadAt,
  sender: "orders" | "billing",
  orderId: string,
) {
  return at(sender, (sql) =>
    sql`
      select id, message_id, type, subscriber, state, attempts, last_status,
             last_error, next_attempt_at
        from queue.deliveries
       where message_id in (select message_id from queue.messages
                             where aggregate_id = ${orderId}
                               and source = ${sender})`);
}

/**
 * The whole story of one order; null when the sandbox has no such order.
 * Read from one snapshot: the events, messages and deliveries agree with one
 * another even while workers move them on. In split mode each service's
 * part is read in its own database, along the order's path: its messages
 * before their deliveries, and those before the inboxes.
 */
export async function orderView(
  sql: Sql,
  sandboxId: string,
  orderId: string,
): Promise<OrderView | null> {
  if (!/^[0-9a-f-]{36}$/.test(orderId)) return null;
  return await readServices(sql, sandboxId, async (at) => {
    // Billing's messages and deliveries come first: a PaymentSucceeded
    // delivered to orders writes orders' events, so a delivery seen done
    // has its event in the orders read that follows.
    const billingSent = await sent(at, "billing", orderId);
    const billingDelivered = await delivered(at, "billing", orderId);
    const [o] = await at("orders", (sql) =>
      sql`
      select id, state, version, total_cents, customer_name, customer_email,
             fulfilment, day::text as day, payment_ref, created_at
        from orders.orders where id = ${orderId}`);
    if (!o) return null;
    const lines = await at("orders", (sql) =>
      sql`
      select sku, name, qty, unit_cents from orders.lines
       where order_id = ${orderId} order by sku`);
    const events = await at("orders", (sql) =>
      sql`
      select type, version, at, message_id from orders.events
       where order_id = ${orderId} order by id`);

    const messages = [...await sent(at, "orders", orderId), ...billingSent]
      .sort((a, b) => a.created_at - b.created_at);
    const deliveries = [
      ...await delivered(at, "orders", orderId),
      ...billingDelivered,
    ].sort((a, b) => Number(a.id) - Number(b.id));
    const ids = deliveries.map((d) => d.message_id as string);
    const inbox = new Map<
      string,
      { status: number; at: string; outcome: unknown }
    >();
    for (const service of [...RECEIVERS, "orders"]) {
      const rows = await at(service, (sql) =>
        sql`
        select message_id, status, received_at, outcome
          from ${sql(`${service}.inbox`)}
         where message_id = any(${ids}::uuid[])`);
      for (const r of rows) {
        inbox.set(`${service}:${r.message_id}`, {
          status: r.status,
          at: r.received_at.toISOString(),
          outcome: r.outcome,
        });
      }
    }
    const [receipt] = await at("receipts", (sql) =>
      sql`
      select number, total_cents, payment_ref, issued_at from receipts.receipts
       where order_id = ${orderId}`);
    const [card] = await at("kitchen", (sql) =>
      sql`
      select state, version from kitchen.cards where order_id = ${orderId}`);
    return {
      orderId: o.id,
      state: o.state,
      version: o.version,
      totalCents: o.total_cents,
      customer: { name: o.customer_name, email: o.customer_email },
      fulfilment: o.fulfilment,
      day: o.day,
      paymentRef: o.payment_ref,
      createdAt: o.created_at.toISOString(),
      lines: lines.map((l) => ({
        sku: l.sku,
        name: l.name,
        qty: l.qty,
        unitCents: l.unit_cents,
      })),
      events: events.map((e) => ({
        type: e.type,
        version: e.version,
        at: e.at.toISOString(),
        messageId: e.message_id,
      })),
      messages: messages.map((m) => ({
        messageId: m.message_id,
        service: m.service,
        eventType: m.type,
        state: m.state,
        attempts: m.attempts,
        lastError: m.last_error,
        createdAt: m.created_at.toISOString(),
        publishedAt: iso(m.published_at),
        traceId: m.trace_id || null,
      })),
      deliveries: deliveries.map((d) => ({
        id: Number(d.id),
        messageId: d.message_id,
        eventType: d.type,
        subscriber: d.subscriber,
        state: d.state,
        attempts: d.attempts,
        lastStatus: d.last_status,
        lastError: d.last_error,
        nextAttemptAt: ["pending", "in_flight"].includes(d.state)
          ? iso(d.next_attempt_at)
          : null,
        accepted: inbox.get(`${d.subscriber}:${d.message_id}`) ?? null,
      })),
      receipt: receipt
        ? {
          number: receipt.number,
          totalCents: receipt.total_cents,
          paymentRef: receipt.payment_ref,
          issuedAt: receipt.issued_at.toISOString(),
        }
        : null,
      kitchenCard: card ? { state: card.state, version: card.version } : null,
    };
  });
}

/**
 * The trace context of the request that placed `orderId`, as its
 * OrderPlaced keeps it (lib/trace), where tracing was on: paying joins the
 * order's trace, so that a paid order is one trace.
 */
export async function placedTraceparent(
  sql: Sql,
  sandboxId: string,
  orderId: string,
): Promise<string | undefined> {
  // Still owed, in the orders outbox; published, in the queue's copy. Read
  // here, with the order's other views across services, as the console.
  const [row] = await readServices(
    sql,
    sandboxId,
    (at) =>
      at("orders", (sql) =>
        sql<{ traceparent: string | null }[]>`
      select coalesce(o.envelope, m.envelope)->>'traceparent' as traceparent
        from orders.events e
        left join orders.outbox o using (message_id)
        left join queue.messages m using (message_id)
       where e.order_id = ${orderId} and e.type = 'OrderPlaced'`),
  );
  return row?.traceparent ?? undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Whether order `orderId` is in `sandboxId` (row-level security hides
 * every other sandbox's orders): one indexed read, for what needs to know
 * only that, such as opening an order's event stream.
 */
export async function orderExists(
  sql: Sql,
  sandboxId: string,
  orderId: string,
): Promise<boolean> {
  if (!UUID.test(orderId)) return false;
  const rows = await readServices(
    sql,
    sandboxId,
    (at) =>
      at(
        "orders",
        (sql) => sql`select 1 from orders.orders where id = ${orderId}::uuid`,
      ),
  );
  return rows.length > 0;
}
