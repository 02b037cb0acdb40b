/**
 * Receipts: the receipt of a paid order (lines, total, payment reference),
 * one message at a time or a batch as one set (lib/inbox/apply_many.ts).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import {
  inStatement,
  jsonb,
  type ManyEffect,
  Refused,
} from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

const ALREADY = { ignored: "the order has its receipt already" };

/** The receipt that `e`, an OrderPaid, makes. */
function receiptOf(e: Envelope) {
  if (e.type !== "OrderPaid") {
    throw new Refused(`receipts does not take ${e.type}`);
  }
  const p = parsePayload("OrderPaid", e.payload);
  return {
    order_id: p.orderId,
    number: `R-${p.paidAt.slice(0, 10).replaceAll("-", "")}-${
      p.orderId.slice(-6).toUpperCase()
    }`,
    lines: p.lines,
    total_cents: p.totalCents,
    payment_ref: p.paymentId,
  };
}

export function applyToReceipts(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const r = receiptOf(e);
  return inStatement(
    tx,
    sql`
    insert into receipts.receipts (order_id, tenant_id, number, lines, total_cents, payment_ref, message_id)
    values (${r.order_id}, ${e.tenantId}, ${r.number}, ${
      sql.json(r.lines as never)
    },
            ${r.total_cents}, ${r.payment_ref}, ${e.messageId})
    on conflict (order_id) do nothing
    returning number`,
    { receipt: r.number },
    ALREADY,
  );
}

export function applyManyToReceipts(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (envelopes.some((e) => e.type !== "OrderPaid")) return undefined;
  return {
    rows: envelopes.map(receiptOf),
    types: {
      order_id: "uuid",
      number: "text",
      lines: "jsonb",
      total_cents: "int",
      payment_ref: "text",
    },
    effect: sql`
      insert into receipts.receipts (order_id, tenant_id, number, lines, total_cents, payment_ref, message_id)
      select order_id, tenant_id, number, lines, total_cents, payment_ref, message_id
        from batch
      on conflict (order_id) do nothing
      returning order_id`,
    answers: sql`
      select b.message_id,
             case when exists (select from effect e where e.order_id = b.order_id)
               then jsonb_build_object('receipt', b.number)
               else ${jsonb(sql, ALREADY)} end as outcome
        from batch b`,
  };
}
