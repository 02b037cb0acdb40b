/**
 * The outbox rows a relay holds: what the workers' heartbeat
 * (lib/workers/heartbeat.ts) reports as its leases besides deliveries.
 * Only the relay's long way claims outbox rows (lib/outbox/outbox_sql.ts);
 * the one-transaction move holds none past its transaction.
 */
import type { Sql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";

/** The rows of `services`' outboxes that `owner` holds, and when the last lease ends. */
export async function outboxLeases(
  sql: Sql,
  services: readonly string[],
  owner: string,
): Promise<{ n: number; until: Date | null }> {
  let n = 0;
  let until: Date | null = null;
  for (const service of services) {
    const [row] = await asBookkeeper(
      sql,
      service,
      ({ sql }) =>
        sql<{ n: number; until: Date | null }[]>`
        select count(*)::int as n, max(lease_expires_at) as until
          from ${sql(`${service}.outbox`)}
         where state = 'claimed'
           and (lease_owner = ${owner} or lease_owner like ${`${owner}#%`})
           and lease_expires_at > now()`,
    );
    n += row.n;
    if (row.until && (!until || row.until > until)) until = row.until;
  }
  return { n, until };
}
