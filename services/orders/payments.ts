/**
 * The orders service as a receiver: PaymentSucceeded and PaymentFailed from
 * billing, through its inbox. A paid order records OrderPaid with its own
 * outbox row, and the chain goes on to the six receivers.
 */
import type { TxSql } from "../../lib/db/connect.ts";
import type { ServiceTx } from "../../lib/db/service.ts";
import { Refused } from "../../lib/inbox/mod.ts";
import {
  type Envelope,
  newEnvelope,
  outboxWrites,
  wakeAfterAppend,
} from "../../lib/outbox/mod.ts";

import { type Line, parsePayload } from "../events.ts";
import {
  lockOrder,
  type OrderRow,
  recordEvent,
  setState,
} from "./orders_sql.ts";
import { OPEN_STATES } from "./states.ts";

export async function applyToOrders(tx: ServiceTx, envelope: Envelope) {
  if (envelope.type === "PaymentSucceeded") {
    return await paymentSucceeded(tx, envelope);
  }
  if (envelope.type === "PaymentFailed") {
    return await paymentFailed(tx, envelope);
  }
  throw new Refused(`orders does not take ${envelope.type}`);
}

async function paymentSucceeded(tx: ServiceTx, envelope: Envelope) {
  const p = parsePayload("PaymentSucceeded", envelope.payload);
  const order = await lockWithLines(tx.sql, p.orderId);
  if (!order) {
    throw new Refused(`no order ${p.orderId} for payment ${p.paymentId}`);
  }
  const base = {
    sandboxId: envelope.tenantId,
    orderId: order.id,
    version: order.version,
    messageId: envelope.messageId,
  };
  if (order.state === "paid") {
    if (order.payment_ref === p.paymentId) {
      return { note: "already paid by this payment" };
    }
    // A second payment for a paid order: keep it visible, it needs a refund.
    await recordEvent(tx.sql, {
      ...base,
      type: "SecondPaymentReceived",
      payload: {
        paymentId: p.paymentId,
        amountCents: p.amountCents,
        action: "refund",
      },
    });
    return {
      note:
        `order already paid by ${order.payment_ref}; ${p.paymentId} needs a refund`,
    };
  }
  if (order.state === "cancelled") {
    await recordEvent(tx.sql, {
      ...base,
      type: "PaymentAfterCancel",
      payload: {
        paymentId: p.paymentId,
        amountCents: p.amountCents,
        action: "refund",
      },
    });
    return { note: `order was cancelled; ${p.paymentId} needs a refund` };
  }
  if (p.amountCents !== order.total_cents) {
    throw new Refused(
      `payment ${p.paymentId} of ${p.amountCents} cents does not match the order total of ${order.total_cents} cents`,
    );
  }
  // The row is locked: the next version is this one plus one. The state,
  // the event and the outbox row are one statement.
  const version = order.version + 1;
  const paid = newEnvelope({
    type: "OrderPaid",
    aggregateId: order.id,
    aggregateVersion: version,
    tenantId: envelope.tenantId,
    payload: {
      orderId: order.id,
      lines: order.lines,
      totalCents: order.total_cents,
      customer: { name: order.customer_name, email: order.customer_email },
      fulfilment: order.fulfilment,
      day: order.day,
      paymentId: p.paymentId,
      paidAt: new Date().toISOString(),
    },
  });
  const { sql } = tx;
  await sql`
    with paid_order as (
      update orders.orders
         set state = 'paid', version = ${version}, updated_at = now(),
             payment_ref = ${p.paymentId}
       where id = ${order.id}
      returning id
    ), paid_event as (
      insert into orders.events
        (tenant_id, order_id, type, version, message_id, payload)
      select ${envelope.tenantId}, id, 'OrderPaid', ${version},
             ${paid.messageId}, ${sql.json({ paymentId: p.paymentId })}
        from paid_order
    ), ${outboxWrites(tx, [paid], sql`exists (select from paid_order)`)}
    select`;
  await wakeAfterAppend(tx);
  return { state: "paid", version };
}

/** An order locked for the rest of the transaction, with its lines. */
async function lockWithLines(
  sql: TxSql,
  orderId: string,
): Promise<(OrderRow & { lines: Line[] }) | undefined> {
  const [row] = await sql<(OrderRow & { lines: Line[] })[]>`
    select o.id, o.tenant_id, o.state, o.version, o.customer_name,
           o.customer_email, o.fulfilment, o.day::text as day, o.total_cents,
           o.payment_ref, o.created_at, o.updated_at,
           coalesce((select json_agg(json_build_object('sku', l.sku,
                              'name', l.name, 'qty', l.qty,
                              'unitCents', l.unit_cents) order by l.sku)
                       from orders.lines l where l.order_id = o.id),
                    '[]') as lines
      from orders.orders o where o.id = ${orderId} for update of o`;
  return row;
}

async function paymentFailed(tx: ServiceTx, envelope: Envelope) {
  const p = parsePayload("PaymentFailed", envelope.payload);
  const order = await lockOrder(tx.sql, p.orderId);
  if (!order) {
    throw new Refused(`no order ${p.orderId} for payment ${p.paymentId}`);
  }
  if (!OPEN_STATES.includes(order.state)) {
    return {
      note: `order is ${order.state}; a failed payment changes nothing`,
    };
  }
  const version = await setState(tx.sql, order, "payment_failed");
  await recordEvent(tx.sql, {
    sandboxId: envelope.tenantId,
    orderId: order.id,
    type: "PaymentFailed",
    version,
    messageId: envelope.messageId,
    payload: { paymentId: p.paymentId, reason: p.reason },
  });
  return { state: "payment_failed", version };
}
