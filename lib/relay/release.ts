/**
 * An operator's way out of the loop guard. The guard parks the rows of a
 * tenant whose automatic re-arms for the day are used up (next attempt at
 * infinity, lib/outbox/outbox_sql.ts); a command of the same service in the
 * same tenant flushes them, but a sender that never acts again would keep
 * them for ever. A release makes them due now, and wakes the relay.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asService, type ServiceTx } from "../db/service.ts";
import { OUTBOX_CHANNEL } from "../outbox/channel.ts";
import { outboxWakerOf } from "../outbox/wake.ts";
import { type ParkedTarget, releaseParkedIn } from "../outbox/outbox_sql.ts";

/** The role a release runs as: the one that may mark every outbox's rows. */
const RELAY_ROLE = "relay";

/** What a release changed. */
export interface Released {
  /** Rows released, in all the outboxes named. */
  count: number;
  /** Rows released per service. */
  byService: Record<string, number>;
}

export interface ReleaseOptions {
  /** Whose rows: the release sees and changes this tenant's rows only. */
  tenantId: string;
  /** The services whose outboxes to look in. */
  services: readonly string[];
  /** Which parked rows; unset fields match every row. */
  target?: ParkedTarget;
  /**
   * Runs in the release's transaction once the rows are released, before
   * it commits: the caller's record of the action (an operator log line),
   * so that a release without its record cannot commit. The transaction is
   * the relay's role, inside the tenant.
   */
  record?: (sql: TxSql, released: Released) => Promise<void>;
}

/**
 * Releases the parked rows of `services`' outboxes that match `target`,
 * inside one tenant, in one transaction: due now, attempts and last error
 * kept, only rows that are still parked (see {@link releaseParkedIn}). Once
 * it has committed, the relay of each service with a released row is woken
 * (the pool's waker, or a NOTIFY at commit where the pool has none), so the
 * rows go at once rather than at the relay's next poll.
 *
 * @example
 * ```ts
 * const { count } = await releaseParked(sql, {
 *   tenantId,
 *   services: ["orders", "billing"],
 *   target: { type: "OrderPaid" },
 * });
 * ```
 */
export async function releaseParked(
  sql: Sql,
  options: ReleaseOptions,
): Promise<Released> {
  const { tenantId, services, target = {} } = options;
  return await asService(sql, RELAY_ROLE, { tenantId }, async (tx) => {
    const byService: Record<string, number> = {};
    let count = 0;
    // One outbox after the other: a release is an operator's click, a few
    // statements, and one transaction keeps it all or nothing with its record.
    for (const service of services) {
      const n = await releaseParkedIn(tx.sql, service, target);
      byService[service] = n;
      count += n;
    }
    const released = { count, byService };
    await options.record?.(tx.sql, released);
    for (const service of services) {
      if (byService[service] > 0) await wakeRelay(tx, service);
    }
    return released;
  });
}

/**
 * Wakes `service`'s relay once `tx` has committed: through the pool's
 * after-commit waker (lib/outbox/wake.ts), which wakes this process's relay
 * at once, or else with a NOTIFY, which PostgreSQL delivers at commit.
 */
async function wakeRelay(tx: ServiceTx, service: string): Promise<void> {
  const waker = outboxWakerOf(tx.pool);
  if (waker) tx.afterCommit(() => waker(service));
  else await tx.sql`select pg_notify(${OUTBOX_CHANNEL}, ${service})`;
}
