/**
 * Queries on the orders schema. Every function takes the orders service's
 * transaction (lib/db/service.ts); none opens one of its own.
 */
import type postgres from "postgres";
import type { TxSql } from "../../lib/db/connect.ts";
import type { ServiceTx } from "../../lib/db/service.ts";
import { outboxWrites, wakeInStatement } from "../../lib/outbox/append.ts";
import type { Envelope } from "../../lib/outbox/envelope.ts";
import type { Line, OrderSnapshot } from "../events.ts";
import type { OrderState } from "./states.ts";

export interface OrderRow {
  id: string;
  tenant_id: string;
  state: OrderState;
  version: number;
  customer_name: string;
  customer_email: string;
  fulfilment: "pickup" | "delivery";
  day: string;
  total_cents: number;
  payment_ref: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Reads an order and locks it for the rest of the transaction. */
export async function lockOrder(sql: TxSql, orderId: string) {
  const [row] = await sql<OrderRow[]>`
    select id, tenant_id, state, version, customer_name, customer_email,
           fulfilment, day::text as day, total_cents, payment_ref,
           created_at, updated_at
      from orders.orders where id = ${orderId} for update`;
  return row;
}

export async function linesOf(sql: TxSql, orderId: string): Promise<Line[]> {
  return await sql<Line[]>`
    select sku, name, qty, unit_cents as "unitCents"
      from orders.lines where order_id = ${orderId} order by sku`;
}

/** The self-contained picture of an order that every message carries. */
export async function snapshot(
  sql: TxSql,
  order: OrderRow,
): Promise<OrderSnapshot> {
  return {
    orderId: order.id,
    lines: await linesOf(sql, order.id),
    totalCents: order.total_cents,
    customer: { name: order.customer_name, email: order.customer_email },
    fulfilment: order.fulfilment,
    day: order.day,
  };
}

/** Moves an order to `state`, one version up; returns the new version. */
export async function setState(
  sql: TxSql,
  order: OrderRow,
  state: OrderState,
  paymentRef?: string,
): Promise<number> {
  const [row] = await sql<{ version: number }[]>`
    update orders.orders
       set state = ${state}, version = version + 1, updated_at = now(),
           payment_ref = coalesce(${paymentRef ?? null}, payment_ref)
     where id = ${order.id}
    returning version`;
  return row.version;
}

export async function recordEvent(
  sql: TxSql,
  e: {
    sandboxId: string;
    orderId: string;
    type: string;
    version: number;
    messageId?: string;
    payload?: Record<string, unknown>;
  },
) {
  await sql`
    insert into orders.events (tenant_id, order_id, type, version, message_id, payload)
    values (${e.sandboxId}, ${e.orderId}, ${e.type}, ${e.version},
            ${e.messageId ?? null}, ${sql.json((e.payload ?? {}) as never)})`;
}

/** A line of a new order, with its product's capacity for one day. */
export interface NewLine extends Line {
  capacity: number;
}

/** What {@link newOrderStatement} did, when it did not refuse. */
export interface NewOrderOutcome {
  /** False: the idempotency key was recorded before; nothing was written. */
  claimed: boolean;
}

/**
 * The SQLSTATE with which {@link newOrderStatement} refuses an order that
 * does not fit the day's capacity (platform.refuse,
 * migrations/0001_platform.sql); the error's message is the sku of the first
 * line, in sku order, that did not fit.
 */
export const ORDER_DOES_NOT_FIT = "BK409";

/** True for the refusal of {@link newOrderStatement}. */
export function isOrderRefusal(
  error: unknown,
): error is { code: string; message: string } {
  return (error as { code?: string } | null)?.code === ORDER_DOES_NOT_FIT;
}

/**
 * A whole new order in one statement: records the idempotency key, takes
 * every line's `qty` from its day's capacity, and inserts the order, its
 * lines, its OrderPlaced event and the outbox row (lib/outbox/append.ts).
 * Each step writes only if the one before it did:
 *
 * - the key: a concurrent request with the same key waits on it until the
 *   first commits, then finds it taken (`claimed` false) and writes nothing;
 * - capacity: one upsert per line, in sku order whatever order the request
 *   lists its lines in (two orders naming the same products in opposite
 *   orders would otherwise deadlock); a line that would pass the product's
 *   capacity is left out, and concurrent orders for the same day and
 *   product queue up on the row lock, so two of them cannot both take the
 *   last bun;
 * - the order and the rest: only if every line was taken. Otherwise the
 *   statement fails with {@link ORDER_DOES_NOT_FIT}, which takes back what
 *   the other lines took.
 *
 * The statement decides all or nothing by itself, so it is returned unsent,
 * for {@link serviceStatement} to send with its COMMIT right behind (one
 * round trip for the whole order). It also wakes the relay for the outbox
 * row (lib/outbox/append.ts `wakeInStatement`).
 */
export function newOrderStatement(
  tx: ServiceTx,
  order: {
    sandboxId: string;
    idempotencyKey: string;
    requestHash: string;
    orderId: string;
    customer: { name: string; email: string };
    fulfilment: string;
    day: string;
    totalCents: number;
    lines: NewLine[];
  },
  envelope: Envelope,
): postgres.PendingQuery<NewOrderOutcome[]> {
  const { sql } = tx;
  const sorted = bySku(order.lines);
  const skus = sorted.map((l) => l.sku);
  const qtys = sorted.map((l) => l.qty);
  const caps = sorted.map((l) => l.capacity);
  const names = sorted.map((l) => l.name);
  const units = sorted.map((l) => l.unitCents);
  const placed = sql`exists (select from placed)`;
  const sandboxId = order.sandboxId;
  return sql<NewOrderOutcome[]>`
    with claim as (
      insert into orders.commands_seen
             (tenant_id, idempotency_key, request_hash, order_id)
      values (${sandboxId}, ${order.idempotencyKey}, ${order.requestHash},
              ${order.orderId})
      on conflict do nothing
      returning order_id
    ), line as (
      select * from unnest(${skus}::text[], ${qtys}::int[], ${caps}::int[],
                           ${names}::text[], ${units}::int[])
               with ordinality as l(sku, qty, cap, name, unit_cents, n)
    ), taken as (
      ${capacityTake(tx, sandboxId, order.day, sorted)}
    ), placed as (
      insert into orders.orders (id, tenant_id, customer_name, customer_email,
                                 fulfilment, day, total_cents)
      select ${order.orderId}, ${sandboxId}, ${order.customer.name},
             ${order.customer.email}, ${order.fulfilment}, ${order.day},
             ${order.totalCents}
       where (select count(*) from taken) = ${sorted.length}
      returning id
    ), placed_lines as (
      insert into orders.lines (order_id, sku, tenant_id, name, qty, unit_cents)
      select placed.id, line.sku, ${sandboxId}, line.name, line.qty,
             line.unit_cents
        from placed, line
    ), placed_event as (
      insert into orders.events (tenant_id, order_id, type, version, message_id)
      select ${sandboxId}, placed.id, 'OrderPlaced', 1, ${envelope.messageId}
        from placed
    ), ${outboxWrites(tx, [envelope], placed)}
    select exists (select from claim) as claimed,
           case when exists (select from claim)
                 and (select count(*) from taken) < ${sorted.length}
                then platform.refuse(${ORDER_DOES_NOT_FIT},
                       (select line.sku from line
                         where line.sku <> all (array(select sku from taken))
                         order by line.n limit 1))
           end as refused,
           ${wakeInStatement(tx, placed)} as woken`;
}

/**
 * A new order's lines in sku order, the order in which it takes capacity
 * whatever order the request lists them in (see {@link newOrderStatement}).
 */
export function bySku<L extends { sku: string }>(lines: L[]): L[] {
  return [...lines].sort((a, b) => a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0);
}

/**
 * The body of a new order's `taken` expression: takes each line's `qty`
 * from its day's capacity, in the order of `line.n`, and returns the sku of
 * each line it took. It reads an expression `line` (sku, qty, cap, n) of the
 * same statement, and writes only if the expression `claim` (the
 * idempotency key, the step before it) has a row. A line that
 * would pass its product's capacity is left out; concurrent orders for the
 * same day and product queue on the row lock.
 */
export function capacityTake(
  tx: ServiceTx,
  sandboxId: string,
  day: string,
  sorted: NewLine[],
): postgres.PendingQuery<postgres.Row[]> {
  const { sql } = tx;
  const skus = sorted.map((l) => l.sku);
  const caps = sorted.map((l) => l.capacity);
  return sql`
      insert into orders.day_counts as d (tenant_id, day, sku, qty)
      select ${sandboxId}, ${day}, line.sku, line.qty
        from claim, line
       where line.qty <= line.cap
       order by line.n
      on conflict (tenant_id, day, sku) do update
         set qty = d.qty + excluded.qty
       where d.qty + excluded.qty
             <= (${caps}::int[])[array_position(${skus}::text[], excluded.sku)]
      returning sku`;
}

/** What is left of each product's capacity on `day`, after this order's own takes. */
export async function capacityLeft(
  sql: TxSql,
  sandboxId: string,
  day: string,
  lines: { sku: string; capacity: number }[],
): Promise<Map<string, number>> {
  const rows = await sql<{ sku: string; qty: number }[]>`
    select sku, qty from orders.day_counts
     where tenant_id = ${sandboxId} and day = ${day}
       and sku = any(${lines.map((l) => l.sku)}::text[])`;
  const promised = new Map(rows.map((r) => [r.sku, r.qty]));
  return new Map(
    lines.map((l) => [l.sku, l.capacity - (promised.get(l.sku) ?? 0)]),
  );
}

/** Gives back what a cancelled order had taken. */
export async function releaseCapacity(
  sql: TxSql,
  order: OrderRow,
  lines: Line[],
) {
  for (const line of lines) {
    await sql`
      update orders.day_counts set qty = greatest(0, qty - ${line.qty})
       where tenant_id = ${order.tenant_id} and day = ${order.day}
         and sku = ${line.sku}`;
  }
}
