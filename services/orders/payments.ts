/**
 * The orders service as a receiver: PaymentSucceeded and PaymentFailed from
 * billing, through its inbox. A paid order records OrderPaid with its own
 * outbox row, and the chain goes on to the six receivers.
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { Refused } from "../../lib/inbox/mod.ts";
import { append, type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";
import { lockOrder, recordEvent, setState, snapshot } from "./orders_sql.ts";
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
  const order = await lockOrder(tx.sql, p.orderId);
  if (!order) {
    throw new Refused(`no order ${p.orderId} for payment ${p.paymentId}`);
  }
  const base = {
    sandboxId: envelope.sandboxId,
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
  const version = await setState(tx.sql, order, "paid", p.paymentId);
  const paid = newEnvelope({
    type: "OrderPaid",
    aggregateId: order.id,
    aggregateVersion: version,
    sandboxId: envelope.sandboxId,
    payload: {
      ...(await snapshot(tx.sql, order)),
      paymentId: p.paymentId,
      paidAt: new Date().toISOString(),
    },
  });
  await recordEvent(tx.sql, {
    ...base,
    type: "OrderPaid",
    version,
    messageId: paid.messageId,
    payload: { paymentId: p.paymentId },
  });
  await append(tx, [paid]);
  return { state: "paid", version };
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
    sandboxId: envelope.sandboxId,
    orderId: order.id,
    type: "PaymentFailed",
    version,
    messageId: envelope.messageId,
    payload: { paymentId: p.paymentId, reason: p.reason },
  });
  return { state: "payment_failed", version };
}
