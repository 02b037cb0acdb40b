/** Receipts: the receipt of a paid order (lines, total, payment reference). */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

export function applyToReceipts(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (e.type !== "OrderPaid") {
    throw new Refused(`receipts does not take ${e.type}`);
  }
  const p = parsePayload("OrderPaid", e.payload);
  const number = `R-${p.paidAt.slice(0, 10).replaceAll("-", "")}-${
    p.orderId.slice(-6).toUpperCase()
  }`;
  return inStatement(
    tx,
    sql`
    insert into receipts.receipts (order_id, tenant_id, number, lines, total_cents, payment_ref, message_id)
    values (${p.orderId}, ${e.tenantId}, ${number}, ${
      sql.json(p.lines as never)
    },
            ${p.totalCents}, ${p.paymentId}, ${e.messageId})
    on conflict (order_id) do nothing
    returning number`,
    { receipt: number },
    { ignored: "the order has its receipt already" },
  );
}
