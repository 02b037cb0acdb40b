/**
 * Appending messages to the outbox of the service whose transaction this is.
 * The rows commit or roll back with the caller's own change: that is the
 * whole promise of the transactional outbox.
 */
import type { ServiceTx } from "../db/service.ts";
import { type Envelope, envelopeSchema } from "./envelope.ts";

import { OUTBOX_CHANNEL } from "./channel.ts";
import { outboxWakerOf } from "./wake.ts";

export { OUTBOX_CHANNEL };

export interface AppendOptions {
  /**
   * Send `NOTIFY outbox` in the transaction (delivered at commit, only
   * then). Default: yes, unless the pool has an after-commit waker
   * (lib/outbox/wake.ts), which is then called after commit instead.
   */
  notify?: boolean;
}

/**
 * Writes `envelopes` into `<service>.outbox` in the caller's transaction, and
 * flushes the service's outbox: rows of this sandbox that wait for a retry
 * (or were parked by the loop guard) become due now, so every command of a
 * service also retries what it still owes, oldest first.
 *
 * @example
 * ```ts
 * await asService(sql, "orders", { sandboxId }, async (tx) => {
 *   await tx.sql`insert into orders.orders ${tx.sql(order)}`;
 *   await append(tx, [newEnvelope({ type: "OrderPlaced", ... })]);
 * });
 * ```
 */
export async function append(
  tx: ServiceTx,
  envelopes: Envelope[],
  options: AppendOptions = {},
): Promise<void> {
  if (envelopes.length === 0) return;
  for (const e of envelopes) envelopeSchema.parse(e);
  const table = tx.sql(`${tx.service}.outbox`);
  // One statement: the new rows (the envelopes as one jsonb array, unpacked
  // by the server; the columns are copies of envelope fields) and the
  // flush. The UPDATE sees the table as it was before this statement, so it
  // touches only older rows that wait for a retry or were parked.
  const sandboxes = [...new Set(envelopes.map((e) => e.sandboxId))];
  await tx.sql`
    with inserted as (
      insert into ${table} (sandbox_id, message_id, type, envelope)
      select (e->>'sandboxId')::uuid, (e->>'messageId')::uuid, e->>'type', e
        from jsonb_array_elements(${tx.sql.json(envelopes as never)}) as e
      returning id
    )
    update ${table} set next_attempt_at = now()
     where state = 'pending' and next_attempt_at > now()
       and sandbox_id = any(${sandboxes}::uuid[])`;
  const waker = outboxWakerOf(tx.pool);
  if (options.notify ?? !waker) {
    await tx.sql`select pg_notify(${OUTBOX_CHANNEL}, ${tx.service})`;
  } else if (waker) {
    const service = tx.service;
    tx.afterCommit(() => waker(service));
  }
}
