/**
 * CRM and customers: append-only histories of each customer's orders and
 * payments, one row per message (the inbox already makes it once). Each
 * takes a batch as one set as well (lib/inbox/apply_many.ts).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, type ManyEffect, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { type EventType, parsePayload } from "../events.ts";

const euros = (cents: number) => `€${(cents / 100).toFixed(2)}`;

const CRM_EVENTS: readonly string[] = ["OrderPaid", "OrderCancelled"];

/** CRM's row for `e`, by column: who, which order, and what happened. */
function interaction(e: Envelope) {
  if (!CRM_EVENTS.includes(e.type)) {
    throw new Refused(`crm does not take ${e.type}`);
  }
  const p = parsePayload(e.type as "OrderPaid", e.payload);
  const paid = e.type === "OrderPaid";
  return {
    email: p.customer.email,
    order_id: p.orderId,
    kind: paid ? "payment" : "cancellation",
    note: paid
      ? `paid ${
        euros(p.totalCents)
      } for ${p.lines.length} item(s), ${p.fulfilment} on ${p.day}`
      : `cancelled an order of ${euros(p.totalCents)}`,
  };
}

export function applyToCrm(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const r = interaction(e);
  return inStatement(
    tx,
    sql`
      insert into crm.interactions (tenant_id, message_id, email, order_id, kind, note)
      values (${e.tenantId}, ${e.messageId}, ${r.email}, ${r.order_id}, ${r.kind}, ${r.note})`,
    { interaction: r.kind },
  );
}

export function applyManyToCrm(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (envelopes.some((e) => !CRM_EVENTS.includes(e.type))) return undefined;
  return {
    rows: envelopes.map(interaction),
    types: { email: "text", order_id: "uuid", kind: "text", note: "text" },
    effect: sql`
      insert into crm.interactions (tenant_id, message_id, email, order_id, kind, note)
      select tenant_id, message_id, email, order_id, kind, note from batch`,
    answers: sql`
      select message_id, jsonb_build_object('interaction', kind) as outcome
        from batch`,
  };
}

const CUSTOMER_EVENTS: readonly string[] = [
  "OrderPlaced",
  "OrderPaid",
  "OrderCancelled",
];

/** The customers' row for `e`, by column. */
function historyEntry(e: Envelope) {
  if (!CUSTOMER_EVENTS.includes(e.type)) {
    throw new Refused(`customers does not take ${e.type}`);
  }
  const p = parsePayload(e.type as EventType & "OrderPlaced", e.payload);
  return {
    email: p.customer.email,
    name: p.customer.name,
    order_id: p.orderId,
    total_cents: p.totalCents,
  };
}

export function applyToCustomers(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const r = historyEntry(e);
  return inStatement(
    tx,
    sql`
      insert into customers.history (tenant_id, message_id, email, name, order_id, event, total_cents)
      values (${e.tenantId}, ${e.messageId}, ${r.email}, ${r.name},
              ${r.order_id}, ${e.type}, ${r.total_cents})`,
    { history: e.type },
  );
}

export function applyManyToCustomers(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (envelopes.some((e) => !CUSTOMER_EVENTS.includes(e.type))) {
    return undefined;
  }
  return {
    rows: envelopes.map(historyEntry),
    types: {
      email: "text",
      name: "text",
      order_id: "uuid",
      total_cents: "int",
    },
    effect: sql`
      insert into customers.history (tenant_id, message_id, email, name, order_id, event, total_cents)
      select tenant_id, message_id, email, name, order_id, type, total_cents
        from batch`,
    answers: sql`
      select message_id, jsonb_build_object('history', type) as outcome
        from batch`,
  };
}
