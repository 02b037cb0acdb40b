/**
 * The operator's way out of the relay's loop guard: release the outbox rows
 * it parked (one message, a group by sender and event type, or every parked
 * row of the sandbox), so that they go now instead of waiting for the
 * sender's next command, which may never come. The action leaves its row in
 * the operator log, in the release's own transaction.
 */
import type { Sql } from "../../lib/db/connect.ts";
import type { Messaging } from "../../lib/mod.ts";
import { poolOf } from "../../lib/db/service.ts";
import { SENDERS } from "../routing.ts";
import { logAction } from "./actions.ts";

export type Sender = typeof SENDERS[number];

/** Which parked rows; no field: every parked row of the sandbox. */
export interface ReleaseRequest {
  messageId?: string;
  service?: Sender;
  eventType?: string;
}

/**
 * Releases the matching parked rows of the operator's sandbox and logs the
 * action (with a count of 0 when none was still parked, as a redrive that
 * found nothing is logged). Returns how many rows became due.
 */
export async function releaseParkedRows(
  sql: Sql,
  ctx: {
    sandboxId: string;
    actor: string;
    /** The process's messaging, whose outbox releases (lib/messaging.ts). */
    outbox: Messaging["outbox"];
  },
  req: ReleaseRequest,
): Promise<{ count: number }> {
  const { sandboxId, actor } = ctx;
  const services = req.service ? [req.service] : SENDERS;
  // One release per database (split mode: each sender's, logged beside
  // its queue there); with one database, one release of them all. Only
  // the databases that released something log it, so that one release is
  // one entry; when none did, the last logs that it found nothing.
  let count = 0;
  const groups = [...groupByPool(sql, services)];
  for (const [i, [pool, group]] of groups.entries()) {
    const last = i === groups.length - 1;
    count += (await ctx.outbox.release(pool, {
      tenantId: sandboxId,
      services: group,
      target: { messageId: req.messageId, type: req.eventType },
      record: async (tx, released) => {
        if (released.count === 0 && !(last && count === 0)) return;
        await logAction(tx, sandboxId, {
          actor,
          action: "release",
          target: { ...req },
          count: released.count,
        });
      },
    })).count;
  }
  return { count };
}

/** `services` by the pool of their database. */
function groupByPool(sql: Sql, services: readonly Sender[]) {
  const groups = new Map<Sql, Sender[]>();
  for (const service of services) {
    const pool = poolOf(sql, service);
    groups.set(pool, [...groups.get(pool) ?? [], service]);
  }
  return groups;
}
