/**
 * Kitchen: one card per order (the primary key makes "at most one" true).
 *
 * | message        | card missing              | card present                         |
 * | -------------- | ------------------------- | ------------------------------------ |
 * | OrderPlaced    | create, state new         | from another OrderPlaced: 422;       |
 * |                |                           | a cancel got here first: stale, 200  |
 * | OrderPaid      | 409 "no card for order"   | confirm, unless stale (200, ignored) |
 * | OrderCancelled | create it cancelled, so a | cancel, unless stale                 |
 * |                | late OrderPlaced is stale |                                      |
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import { inStatement, NotYet, Refused } from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/mod.ts";
import { parsePayload } from "../events.ts";

interface Card {
  state: "new" | "confirmed" | "cancelled";
  version: number;
  placed_message_id: string | null;
}

/** What the kitchen takes; anything else is refused. */
const TAKES = ["OrderPlaced", "OrderPaid", "OrderCancelled"] as const;

export async function applyToKitchen(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const orderId = e.aggregateId;
  const v = e.aggregateVersion;
  // Checked whole before anything is read, also where only the envelope is
  // used (OrderPaid, OrderCancelled): a malformed message is refused, never
  // applied in part.
  if (!(TAKES as readonly string[]).includes(e.type)) {
    throw new Refused(`kitchen does not take ${e.type}`);
  }
  const p = parsePayload(e.type as typeof TAKES[number], e.payload);
  const [card] = await sql<Card[]>`
    select state, version, placed_message_id from kitchen.cards
     where order_id = ${orderId} for update`;
  switch (e.type) {
    case "OrderPlaced": {
      if (!card) {
        return inStatement(
          tx,
          sql`
          insert into kitchen.cards (order_id, tenant_id, state, version, items, day, placed_message_id)
          values (${orderId}, ${e.tenantId}, 'new', ${v}, ${
            sql.json(p.lines as never)
          },
                  ${p.day}, ${e.messageId})`,
          { card: "new" },
        );
      }
      if (card.placed_message_id === null && card.version > v) {
        return {
          ignored:
            `stale: the card is at version ${card.version} (${card.state})`,
        };
      }
      throw new Refused(
        `order ${orderId} already has a card (placed by message ${card.placed_message_id})`,
      );
    }
    case "OrderPaid": {
      if (!card) throw new NotYet(`no card for order ${orderId}`);
      if (card.version >= v || card.state === "cancelled") {
        return {
          ignored:
            `stale: the card is at version ${card.version} (${card.state})`,
        };
      }
      return inStatement(
        tx,
        sql`update kitchen.cards set state = 'confirmed', version = ${v}, updated_at = now()
             where order_id = ${orderId}`,
        { card: "confirmed" },
      );
    }
    case "OrderCancelled": {
      if (!card) {
        return inStatement(
          tx,
          sql`
          insert into kitchen.cards (order_id, tenant_id, state, version)
          values (${orderId}, ${e.tenantId}, 'cancelled', ${v})`,
          { card: "cancelled", note: "cancelled before it was placed" },
        );
      }
      if (card.version >= v) {
        return {
          ignored:
            `stale: the card is at version ${card.version} (${card.state})`,
        };
      }
      return inStatement(
        tx,
        sql`update kitchen.cards set state = 'cancelled', version = ${v}, updated_at = now()
             where order_id = ${orderId}`,
        { card: "cancelled" },
      );
    }
  }
  throw new Refused(`kitchen does not take ${e.type}`);
}
