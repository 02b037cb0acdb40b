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
 * Adds `qty` of `sku` to what the day has promised, unless that would pass
 * `capacity`. The row lock makes concurrent orders for the same day and
 * product queue up here, so two of them cannot both take the last bun.
 * Returns what was left before, or null when the qty was taken.
 */
export async function takeCapacity(
  sql: TxSql,
  sandboxId: string,
  day: string,
  sku: string,
  qty: number,
  capacity: number,
): Promise<number | null> {
  await sql`
    insert into orders.day_counts (sandbox_id, day, sku, qty)
    values (${sandboxId}, ${day}, ${sku}, 0)
    on conflict do nothing`;
  const [row] = await sql<{ qty: number }[]>`
    select qty from orders.day_counts
     where sandbox_id = ${sandboxId} and day = ${day} and sku = ${sku}
     for update`;
  if (row.qty + qty > capacity) return capacity - row.qty;
  await sql`
    update orders.day_counts set qty = qty + ${qty}
     where sandbox_id = ${sandboxId} and day = ${day} and sku = ${sku}`;
  return null;
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
