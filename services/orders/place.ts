/**
 * Placing an order. One orders transaction writes the order, its lines, the
 * OrderPlaced event, the outbox row and the idempotency key: all or nothing,
 * and all in one statement (services/orders/orders_sql.ts
 * newOrderStatement), sent with its COMMIT in one round trip.
 */
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { sha256HexSync } from "../../lib/hash.ts";
import { asService, serviceStatement } from "../../lib/db/service.ts";
import { HttpError } from "../../kit/http/errors.ts";
import {
  type Envelope,
  newEnvelope,
  uuidv7,
} from "../../lib/outbox/envelope.ts";
import { menuItem } from "../menu.ts";
import type { OrderSnapshot } from "../events.ts";
import {
  capacityLeft,
  isOrderRefusal,
  type NewLine,
  type NewOrderOutcome,
  newOrderStatement,
} from "./orders_sql.ts";
import type { PlaceOrderInput } from "./schema.ts";

export interface Placed {
  orderId: string;
  state: string;
  totalCents: number;
  /** False when the idempotency key had placed this order already. */
  created: boolean;
}

/**
 * Places an order, or returns the order that the same idempotency key placed
 * before. The same key with a different body is a 409. An order over the
 * day's capacity is a 409 naming the line, and writes nothing.
 */
export async function placeOrder(
  sql: Sql,
  sandboxId: string,
  input: PlaceOrderInput,
): Promise<Placed> {
  const { day, requestHash, orderId, lines, totalCents, snapshot } =
    prepareOrder(input);
  const envelope = orderPlacedEnvelope(sandboxId, snapshot);
  let outcome: NewOrderOutcome;
  try {
    [outcome] = await serviceStatement(
      sql,
      "orders",
      { tenantId: sandboxId },
      (tx) =>
        newOrderStatement(
          tx,
          {
            sandboxId,
            idempotencyKey: input.idempotencyKey,
            requestHash,
            orderId,
            customer: input.customer,
            fulfilment: input.fulfilment,
            day,
            totalCents,
            lines,
          },
          envelope,
        ),
    );
  } catch (error) {
    if (!isOrderRefusal(error)) throw error;
    // Nothing was written. The line that did not fit, and what is left of
    // it now.
    const i = lines.findIndex((l) => l.sku === error.message);
    if (i < 0) throw error;
    const line = lines[i];
    const n = (await asService(
      sql,
      "orders",
      { tenantId: sandboxId },
      (tx) => capacityLeft(tx.sql, sandboxId, day, [line]),
    )).get(line.sku)!;
    throw new HttpError(
      409,
      n === 0
        ? `${line.name} is sold out for ${day}`
        : `only ${n} ${line.name} left for ${day}; you asked for ${line.qty}`,
      [{ path: `items.${i}.qty`, message: `only ${n} left for ${day}` }],
    );
  }
  if (!outcome.claimed) {
    return await asService(
      sql,
      "orders",
      { tenantId: sandboxId },
      (tx) => placedBefore(tx.sql, sandboxId, input, requestHash),
    );
  }
  return { orderId, state: "placed", totalCents, created: true };
}

/**
 * A new order as it is prepared before any SQL is sent: its day, the hash
 * of the request, a new id, its lines priced and with their capacity from
 * the menu, its total, and the snapshot that its messages carry.
 */
export function prepareOrder(input: PlaceOrderInput) {
  const day = input.day ?? new Date().toISOString().slice(0, 10);
  // The body as sent: a retry after midnight of a request that left `day`
  // out is still the same request.
  const request = { ...input, idempotencyKey: undefined };
  const requestHash = sha256HexSync(JSON.stringify(request));
  const orderId = uuidv7();
  const lines: NewLine[] = input.items.map((item) => {
    const menu = menuItem(item.sku)!;
    return {
      sku: item.sku,
      name: menu.name,
      qty: item.qty,
      unitCents: menu.priceCents,
      capacity: menu.dailyCapacity,
    };
  });
  let totalCents = 0;
  for (const l of lines) totalCents += l.qty * l.unitCents;
  const snapshot: OrderSnapshot = {
    orderId,
    lines: lines.map(({ sku, name, qty, unitCents }) => ({
      sku,
      name,
      qty,
      unitCents,
    })),
    totalCents,
    customer: input.customer,
    fulfilment: input.fulfilment,
    day,
  };
  return { day, requestHash, orderId, lines, totalCents, snapshot };
}

/** The OrderPlaced message of a new order, version 1 of its aggregate. */
export function orderPlacedEnvelope(
  sandboxId: string,
  snapshot: OrderSnapshot,
): Envelope {
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId: snapshot.orderId,
    aggregateVersion: 1,
    tenantId: sandboxId,
    payload: snapshot,
  });
}

/** The order that the same key placed before; another body is a 409. */
async function placedBefore(
  sql: TxSql,
  sandboxId: string,
  input: PlaceOrderInput,
  requestHash: string,
): Promise<Placed> {
  const [seen] = await sql<{ request_hash: string; order_id: string }[]>`
    select request_hash, order_id from orders.commands_seen
     where tenant_id = ${sandboxId} and idempotency_key = ${input.idempotencyKey}`;
  if (seen.request_hash !== requestHash) {
    throw new HttpError(
      409,
      "this idempotency key was used for a different order; use a new key for a new order",
      [{ path: "idempotencyKey", message: "used for a different order" }],
    );
  }
  const [order] = await sql<{ state: string; total_cents: number }[]>`
    select state, total_cents from orders.orders where id = ${seen.order_id}`;
  return {
    orderId: seen.order_id,
    state: order.state,
    totalCents: order.total_cents,
    created: false,
  };
}
