/**
 * Placing an order. One orders transaction writes the order, its lines, the
 * OrderPlaced event, the outbox row and the idempotency key: all or nothing.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { sha256Hex } from "../../lib/hash.ts";
import { asService } from "../../lib/db/service.ts";
import { HttpError } from "../../lib/http/errors.ts";
import { append, newEnvelope, uuidv7 } from "../../lib/outbox/mod.ts";
import { menuItem } from "../menu.ts";
import type { OrderSnapshot } from "../events.ts";
import { takeCapacity } from "./orders_sql.ts";
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
  options: { notify?: boolean } = {},
): Promise<Placed> {
  const day = input.day ?? new Date().toISOString().slice(0, 10);
  // The body as sent: a retry after midnight of a request that left `day`
  // out is still the same request.
  const request = { ...input, idempotencyKey: undefined };
  const requestHash = await sha256Hex(JSON.stringify(request));
  const orderId = uuidv7();
  return await asService(sql, "orders", { sandboxId }, async (tx) => {
    const { sql } = tx;
    // A concurrent request with the same key waits here until the first
    // commits, then finds its row: one order, whatever the timing.
    const claimed = await sql`
      insert into orders.commands_seen (sandbox_id, idempotency_key, request_hash, order_id)
      values (${sandboxId}, ${input.idempotencyKey}, ${requestHash}, ${orderId})
      on conflict do nothing returning order_id`;
    if (claimed.length === 0) {
      const [seen] = await sql<{ request_hash: string; order_id: string }[]>`
        select request_hash, order_id from orders.commands_seen
         where sandbox_id = ${sandboxId} and idempotency_key = ${input.idempotencyKey}`;
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

    const lines = input.items.map((item) => {
      const menu = menuItem(item.sku)!;
      return {
        sku: item.sku,
        name: menu.name,
        qty: item.qty,
        unitCents: menu.priceCents,
      };
    });
    const short = await takeCapacity(
      sql,
      sandboxId,
      day,
      lines.map((l) => ({ ...l, capacity: menuItem(l.sku)!.dailyCapacity })),
    );
    if (short.length > 0) {
      const { sku, left } = short[0];
      const i = lines.findIndex((l) => l.sku === sku);
      const line = lines[i];
      throw new HttpError(
        409,
        left === 0
          ? `${line.name} is sold out for ${day}`
          : `only ${left} ${line.name} left for ${day}; you asked for ${line.qty}`,
        [{ path: `items.${i}.qty`, message: `only ${left} left for ${day}` }],
      );
    }
    const totalCents = lines.reduce((sum, l) => sum + l.qty * l.unitCents, 0);
    const snapshot: OrderSnapshot = {
      orderId,
      lines,
      totalCents,
      customer: input.customer,
      fulfilment: input.fulfilment,
      day,
    };
    const envelope = newEnvelope({
      type: "OrderPlaced",
      aggregateId: orderId,
      aggregateVersion: 1,
      sandboxId,
      payload: snapshot,
    });
    // The order, its lines and its first event: one statement.
    await sql`
      with o as (
        insert into orders.orders (id, sandbox_id, customer_name, customer_email,
                                   fulfilment, day, total_cents)
        values (${orderId}, ${sandboxId}, ${input.customer.name}, ${input.customer.email},
                ${input.fulfilment}, ${day}, ${totalCents})
        returning id
      ), l as (
        insert into orders.lines (order_id, sku, sandbox_id, name, qty, unit_cents)
        select o.id, l.sku, ${sandboxId}, l.name, l.qty, l."unitCents"
          from o, jsonb_to_recordset(${sql.json(lines as never)})
            as l(sku text, name text, qty int, "unitCents" int)
      )
      insert into orders.events (sandbox_id, order_id, type, version, message_id)
      select ${sandboxId}, o.id, 'OrderPlaced', 1, ${envelope.messageId} from o`;
    await append(tx, [envelope], { notify: options.notify });
    return { orderId, state: "placed", totalCents, created: true };
  });
}
