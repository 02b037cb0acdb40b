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
 *
 * A batch of OrderPlaced and OrderPaid applies as one set
 * (lib/inbox/apply_many.ts).
 */
import type { ServiceTx } from "../../lib/db/service.ts";
import {
  inStatement,
  type ManyEffect,
  NotYet,
  Refused,
} from "../../lib/inbox/mod.ts";
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

/**
 * A batch of OrderPlaced and OrderPaid as one set: a card made for each
 * OrderPlaced, and confirmed for each OrderPaid whose card is there, not
 * at a later version and not cancelled.
 * The answers read the cards as they were before the statement, for the
 * stale ones' words. A message the set cannot answer as the table above
 * does gets no answer, which sends the batch the long way: an OrderPaid
 * without its card (409 there), an OrderPlaced meeting a card that is not
 * stale (422 there).
 */
export function applyManyToKitchen(
  { sql }: ServiceTx,
  envelopes: readonly Envelope[],
): ManyEffect | undefined {
  if (
    envelopes.some((e) => e.type !== "OrderPlaced" && e.type !== "OrderPaid")
  ) return undefined;
  const rows = envelopes.map((e) => {
    if (e.type === "OrderPaid") {
      parsePayload("OrderPaid", e.payload);
      return { order_id: e.aggregateId, items: [], day: null };
    }
    const p = parsePayload("OrderPlaced", e.payload);
    return { order_id: e.aggregateId, items: p.lines, day: p.day };
  });
  return {
    rows,
    types: { order_id: "uuid", items: "jsonb", day: "date" },
    // A batch of OrderPaid alone is an update, cheaper than the upsert. In
    // the upsert an OrderPaid goes in only where its card is, so its row
    // always meets the card and updates it; `created` tells the two apart.
    effect: envelopes.every((e) => e.type === "OrderPaid")
      ? sql`
      update kitchen.cards c
         set state = 'confirmed', version = b.aggregate_version,
             updated_at = now()
        from batch b
       where c.order_id = b.order_id and c.version < b.aggregate_version
         and c.state <> 'cancelled'
      returning c.order_id, false as created`
      : sql`
      insert into kitchen.cards as c
             (order_id, tenant_id, state, version, items, day, placed_message_id)
      select b.order_id, b.tenant_id,
             case when b.type = 'OrderPlaced' then 'new' else 'confirmed' end,
             b.aggregate_version, b.items, b.day,
             case when b.type = 'OrderPlaced' then b.message_id end
        from batch b
       where b.type = 'OrderPlaced'
          or exists (select from kitchen.cards k where k.order_id = b.order_id)
      on conflict (order_id) do update
         set state = 'confirmed', version = excluded.version, updated_at = now()
       where excluded.state = 'confirmed' and c.version < excluded.version
         and c.state <> 'cancelled'
      returning c.order_id, (c.xmax = 0) as created`,
    answers: sql`
      select message_id, outcome from (
        select b.message_id,
               case
                 when e.created and b.type = 'OrderPlaced'
                   then '{"card": "new"}'::jsonb
                 when not e.created and b.type = 'OrderPaid'
                   then '{"card": "confirmed"}'::jsonb
                 when e.order_id is null and c.order_id is not null
                  and (b.type = 'OrderPaid' or (c.placed_message_id is null
                       and c.version > b.aggregate_version))
                   then jsonb_build_object('ignored',
                          'stale: the card is at version ' || c.version ||
                          ' (' || c.state || ')')
               end as outcome
          from batch b
          left join effect e on e.order_id = b.order_id
          left join kitchen.cards c on c.order_id = b.order_id) a
       where outcome is not null`,
  };
}
