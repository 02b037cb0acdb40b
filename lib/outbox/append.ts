/**
 * Appending messages to the outbox of the service whose transaction this is.
 * The rows commit or roll back with the caller's own change: that is the
 * whole promise of the transactional outbox.
 */
import type { Fragment } from "../db/connect.ts";
import type { ServiceTx } from "../db/service.ts";
import { type Envelope, envelopeSchema } from "./envelope.ts";

import { OUTBOX_CHANNEL } from "./channel.ts";
import { outboxWakerOf } from "./wake.ts";

export { OUTBOX_CHANNEL };

export interface AppendOptions {
  /**
   * Send `NOTIFY outbox` in the transaction (delivered at commit, only
   * then). Default: yes, unless the pool has an after-commit waker
   * (lib/outbox/wake.ts), which is then called after commit instead. A
   * pool without a waker always sends the NOTIFY.
   */
  notify?: boolean;
}

/**
 * Writes `envelopes` into `<service>.outbox` in the caller's transaction.
 * The relay that takes them also takes what their tenant still owes (rows
 * waiting for a retry, or parked by the loop guard), oldest first: every
 * command of a service also retries what it owes (lib/outbox/outbox_sql.ts
 * `dueOrOwed`).
 *
 * @example
 * ```ts
 * await asService(sql, "orders", { tenantId }, async (tx) => {
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
  await tx.sql`with ${outboxWrites(tx, envelopes)} select`;
  await wakeAfterAppend(tx, options);
}

/**
 * What {@link append} writes, as a common table expression for a statement
 * of the caller's own (`outbox_rows`, to follow `with` or a comma), so that
 * a command can write its own rows and its messages in one statement.
 * `when`, a condition that may name the caller's earlier expressions,
 * decides whether it writes anything at all (for example: only if the
 * caller's own insert made a row). Once the
 * statement has appended, the caller calls {@link wakeAfterAppend}.
 *
 * The envelopes are validated here (zod), before any SQL is sent.
 *
 * @example
 * ```ts
 * const writes = outboxWrites(tx, [envelope], tx.sql`exists (select from o)`);
 * await tx.sql`
 *   with o as (insert into orders.orders ... returning id), ${writes}
 *   select`;
 * await wakeAfterAppend(tx);
 * ```
 */
export function outboxWrites(
  tx: ServiceTx,
  envelopes: Envelope[],
  when?: Fragment,
): Fragment {
  if (envelopes.length === 0) throw new TypeError("no envelopes to append");
  // Stored as parsed: an envelope of version 1 is stored as version 2.
  const parsed = envelopes.map((e) => envelopeSchema.parse(e));
  const { sql } = tx;
  const table = sql(`${tx.service}.outbox`);
  const gate = when ?? sql`true`;
  // The envelopes as one jsonb array, unpacked by the server (the columns
  // are copies of envelope fields).
  return sql`
    outbox_rows as (
      insert into ${table} (tenant_id, message_id, type, envelope)
      select (e->>'tenantId')::uuid, (e->>'messageId')::uuid, e->>'type', e
        from jsonb_array_elements(${sql.json(parsed as never)}) as e
       where ${gate}
      returning id
    )`;
}

/**
 * Wakes the relay for what this transaction appended: a `NOTIFY outbox` in
 * the transaction, or the pool's after-commit waker (see
 * {@link AppendOptions.notify}).
 */
export async function wakeAfterAppend(
  tx: ServiceTx,
  options: AppendOptions = {},
): Promise<void> {
  if (!wakesAfterCommit(tx, options)) {
    await tx.sql`select pg_notify(${OUTBOX_CHANNEL}, ${tx.service})`;
  }
}

/**
 * Sets the pool's after-commit waker to wake the relay once `tx` has
 * committed, unless the wake-up must be a NOTIFY in the transaction (see
 * {@link AppendOptions.notify}): then returns false, and the caller sends it.
 */
function wakesAfterCommit(tx: ServiceTx, options: AppendOptions): boolean {
  const waker = outboxWakerOf(tx.pool);
  // `notify: false` on a pool without a waker still wakes the relay, by the
  // NOTIFY: there is nothing else to call.
  if (!waker || (options.notify ?? false)) return false;
  const service = tx.service;
  tx.afterCommit(() => waker!(service));
  return true;
}

/**
 * The wake-up for a statement that appends with {@link outboxWrites} and
 * has its COMMIT sent right behind it (lib/db/service.ts
 * `serviceStatement`), so that nothing can follow it in the transaction: an
 * expression for that statement's select list. With a NOTIFY in the
 * transaction (see {@link AppendOptions.notify}) the expression sends it,
 * when `when` holds; otherwise it is a constant, and the pool's after-commit
 * waker is called once the transaction has committed, whatever the
 * statement appended: the statement's answer is not known yet when the
 * waker is set, and a wake with nothing new costs one empty move.
 */
export function wakeInStatement(
  tx: ServiceTx,
  when: Fragment,
  options: AppendOptions = {},
): Fragment {
  if (wakesAfterCommit(tx, options)) return tx.sql`null::int`;
  return tx.sql`case when ${when}
    then (select 1 from pg_notify(${OUTBOX_CHANNEL}, ${tx.service})) end`;
}
