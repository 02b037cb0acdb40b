/** Cancelling an unpaid order: OrderCancelled, in one orders transaction. */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { append, newEnvelope } from "../../lib/outbox/mod.ts";
import {
  linesOf,
  lockOrder,
  recordEvent,
  releaseCapacity,
  setState,
  snapshot,
} from "./orders_sql.ts";
import { OPEN_STATES } from "./states.ts";

/**
 * Cancels an order that is not paid. Cancelling a cancelled order changes
 * nothing; a paid order is a 409; an unknown one (or another sandbox's) a 404.
 */
export async function cancelOrder(
  sql: Sql,
  sandboxId: string,
  orderId: string,
  reason = "cancelled by the customer",
): Promise<{ state: "cancelled"; changed: boolean }> {
  return await asService(sql, "orders", { tenantId: sandboxId }, async (tx) => {
    const order = await lockOrder(tx.sql, orderId);
    if (!order) throw new HttpError(404, `no order ${orderId}`);
    if (order.state === "cancelled") {
      return { state: "cancelled", changed: false };
    }
    if (!OPEN_STATES.includes(order.state)) {
      throw new HttpError(
        409,
        `order ${orderId} is ${order.state}; it can no longer be cancelled`,
      );
    }
    const version = await setState(tx.sql, order, "cancelled");
    await releaseCapacity(tx.sql, order, await linesOf(tx.sql, orderId));
    const envelope = newEnvelope({
      type: "OrderCancelled",
      aggregateId: orderId,
      aggregateVersion: version,
      tenantId: sandboxId,
      payload: { ...(await snapshot(tx.sql, order)), reason },
    });
    await recordEvent(tx.sql, {
      sandboxId,
      orderId,
      type: "OrderCancelled",
      version,
      messageId: envelope.messageId,
      payload: { reason },
    });
    await append(tx, [envelope]);
    return { state: "cancelled", changed: true };
  });
}
