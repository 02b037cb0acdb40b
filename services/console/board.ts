/** The kitchen board: every card of the sandbox, by state. */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";

export async function kitchenBoard(sql: Sql, sandboxId: string) {
  const rows = await asService(sql, "console", { sandboxId }, ({ sql }) =>
    sql`
      select order_id, state, version, items, day::text as day, updated_at
        from kitchen.cards order by updated_at desc limit 500`);
  return rows.map((r) => ({
    orderId: r.order_id as string,
    state: r.state as "new" | "confirmed" | "cancelled",
    version: r.version as number,
    items: r.items as { sku: string; name: string; qty: number }[],
    day: r.day as string | null,
    updatedAt: (r.updated_at as Date).toISOString(),
  }));
}
