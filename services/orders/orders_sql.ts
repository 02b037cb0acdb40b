/**
 * Queries on the orders schema. Every function takes the orders service's
 * transaction (lib/db/service.ts); none opens one of its own.
 */
import type { TxSql } from "../../lib/db/connect.ts";
import type { Line, OrderSnapshot } from "../events.ts";
import type { OrderState } from "./states.ts";

export interface OrderRow {
  id: string;
  sandbox_id: string;
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
    select id, sandbox_id, state, version, customer_name, customer_email,
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
    insert into orders.events (sandbox_id, order_id, type, version, message_id, payload)
    values (${e.sandboxId}, ${e.orderId}, ${e.type}, ${e.version},
            ${e.messageId ?? null}, ${sql.json((e.payload ?? {}) as never)})`;
}

/**
 * Adds every line's `qty` to what its day has promised, in one statement,
 * unless that would pass the product's capacity. Rows are locked in sku
 * order whatever order the request lists its lines in: two orders naming the
 * same products in opposite orders would otherwise deadlock. Concurrent
 * orders for the same day and product queue up on the row lock, so two of
 * them cannot both take the last bun. Returns the lines that did not fit,
 * with what was left of each; an empty list means all were taken.
 */
export async function takeCapacity(
  sql: TxSql,
  sandboxId: string,
  day: string,
  lines: { sku: string; qty: number; capacity: number }[],
): Promise<{ sku: string; left: number }[]> {
  const sorted = [...lines].sort((a, b) =>
    a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0
  );
  const caps = Object.fromEntries(sorted.map((l) => [l.sku, l.capacity]));
  const taken = await sql<{ sku: string }[]>`
    insert into orders.day_counts as d (sandbox_id, day, sku, qty)
    select ${sandboxId}, ${day}, l.sku, l.qty
      from unnest(${sorted.map((l) => l.sku)}::text[], ${
    sorted.map((l) => l.qty)
  }::int[],
                  ${sorted.map((l) => l.capacity)}::int[])
           with ordinality as l(sku, qty, cap, n)
     where l.qty <= l.cap
     order by l.n
    on conflict (sandbox_id, day, sku) do update
       set qty = d.qty + excluded.qty
     where d.qty + excluded.qty <= (${
    sql.json(caps)
  }::jsonb ->> excluded.sku)::int
    returning sku`;
  if (taken.length === sorted.length) return [];
  const done = new Set(taken.map((r) => r.sku));
  const missing = sorted.filter((l) => !done.has(l.sku));
  const rows = await sql<{ sku: string; qty: number }[]>`
    select sku, qty from orders.day_counts
     where sandbox_id = ${sandboxId} and day = ${day}
       and sku = any(${missing.map((l) => l.sku)}::text[])`;
  const promised = new Map(rows.map((r) => [r.sku, r.qty]));
  return missing.map((l) => ({
    sku: l.sku,
    left: l.capacity - (promised.get(l.sku) ?? 0),
  }));
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
       where sandbox_id = ${order.sandbox_id} and day = ${order.day}
         and sku = ${line.sku}`;
  }
}
