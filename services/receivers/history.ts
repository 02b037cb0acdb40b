/**
 * CRM and customers: append-only histories of each customer's orders and
 * payments, one row per message (the inbox already makes it once).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { type EventType, parsePayload } from "../events.ts";

const euros = (cents: number) => `€${(cents / 100).toFixed(2)}`;

export function applyToCrm(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (e.type !== "OrderPaid" && e.type !== "OrderCancelled") {
    throw new Refused(`crm does not take ${e.type}`);
  }
  const p = parsePayload(e.type, e.payload);
  const kind = e.type === "OrderPaid" ? "payment" : "cancellation";
  const note = e.type === "OrderPaid"
    ? `paid ${
      euros(p.totalCents)
    } for ${p.lines.length} item(s), ${p.fulfilment} on ${p.day}`
    : `cancelled an order of ${euros(p.totalCents)}`;
  return inStatement(
    tx,
    sql`
      insert into crm.interactions (tenant_id, message_id, email, order_id, kind, note)
      values (${e.tenantId}, ${e.messageId}, ${p.customer.email}, ${p.orderId}, ${kind}, ${note})`,
    { interaction: kind },
  );
}

const CUSTOMER_EVENTS: readonly string[] = [
  "OrderPlaced",
  "OrderPaid",
  "OrderCancelled",
];

export function applyToCustomers(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  if (!CUSTOMER_EVENTS.includes(e.type)) {
    throw new Refused(`customers does not take ${e.type}`);
  }
  const p = parsePayload(e.type as EventType & "OrderPlaced", e.payload);
  return inStatement(
    tx,
    sql`
      insert into customers.history (tenant_id, message_id, email, name, order_id, event, total_cents)
      values (${e.tenantId}, ${e.messageId}, ${p.customer.email}, ${p.customer.name},
              ${p.orderId}, ${e.type}, ${p.totalCents})`,
    { history: e.type },
  );
}
