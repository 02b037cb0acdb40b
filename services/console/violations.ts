/**
 * Order violations for the console: the messages that reached a receiver
 * after a later version of their aggregate had been applied there, as each
 * inbox noted them (lib/inbox/receive.ts, `<subscriber>.order_violations`).
 * Such a message is answered as the receiver decides (most ignore a stale
 * instruction); the row says that the transport delivered out of order.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { readServices, sharingDatabases } from "../databases.ts";
import { SUBSCRIBERS } from "../routing.ts";
import { type OrderViolations, orderViolationsSchema } from "./contracts.ts";

export type { OrderViolation, OrderViolations } from "./contracts.ts";

interface Row {
  subscriber: string;
  aggregate_id: string;
  message_id: string;
  type: string;
  arrived_version: number;
  applied_version: number;
  at: Date;
  total: number;
}

/** The newest order violations of one sandbox, and their count. */
export async function orderViolations(
  sql: Sql,
  sandboxId: string,
  filter: { subscriber?: string; limit?: number } = {},
): Promise<OrderViolations> {
  const limit = Math.min(filter.limit ?? 100, 1000);
  const names = filter.subscriber ? [filter.subscriber] : [...SUBSCRIBERS];
  // Every receiver's table, one after another in one statement where they
  // share a database; each in its own in split mode, merged here.
  const parts = await readServices(sql, sandboxId, async (at, _, together) => {
    const parts: Row[][] = [];
    for (const group of sharingDatabases(names, together)) {
      parts.push(
        await at(group[0], (sql) => {
          const [first, ...rest] = group.map((name) =>
            sql`select ${name}::text as subscriber, aggregate_id, message_id,
                     type, arrived_version, applied_version, at
                from ${sql(`${name}.order_violations`)}`
          );
          const all = rest.reduce(
            (acc, part) => sql`${acc} union all ${part}`,
            first,
          );
          return sql<Row[]>`
        select v.*, count(*) over ()::int as total from (${all}) v
         order by at desc, message_id limit ${limit}`;
        }),
      );
    }
    return parts;
  });
  const rows = parts.flat();
  if (parts.length > 1) {
    rows.sort((a, b) => +b.at - +a.at || (a.message_id < b.message_id ? -1 : 1))
      .splice(limit);
  }
  const total = parts.reduce((n, rows) => n + (rows[0]?.total ?? 0), 0);
  return orderViolationsSchema.parse({
    total,
    items: rows.map((r) => ({
      subscriber: r.subscriber,
      aggregateId: r.aggregate_id,
      messageId: r.message_id,
      eventType: r.type,
      arrivedVersion: r.arrived_version,
      appliedVersion: r.applied_version,
      at: r.at.toISOString(),
    })),
  });
}
