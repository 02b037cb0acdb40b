/** The kitchen board: every card of the sandbox, by state. */
import { z } from "zod";
import type { Sql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { type KitchenCard, kitchenCardSchema } from "./contracts.ts";

interface CardRow {
  order_id: string;
  state: string;
  version: number;
  items: unknown;
  day: string | null;
  updated_at: Date;
}

const cardsSchema = z.array(kitchenCardSchema);

/** Up to 500 cards, the latest changed first, checked against the contract. */
export async function kitchenBoard(
  sql: Sql,
  sandboxId: string,
): Promise<KitchenCard[]> {
  const rows = await readServices(
    sql,
    sandboxId,
    (at) =>
      at("kitchen", (sql) =>
        sql<CardRow[]>`
      select order_id, state, version, items, day::text as day, updated_at
        from kitchen.cards order by updated_at desc limit 500`),
  );
  return cardsSchema.parse(rows.map((r) => ({
    orderId: r.order_id,
    state: r.state,
    version: r.version,
    items: r.items,
    day: r.day,
    updatedAt: r.updated_at.toISOString(),
  })));
}
