/**
 * Corrected copies (an envelope with `supersedes`): a copy goes under a new
 * message id, so the inbox's key alone would apply it even when the
 * message it replaces was applied after all (its acknowledgement was lost,
 * or it timed out and committed later). The receiver therefore claims the
 * replaced ids in its own transaction, before the effect, and the sender's
 * operator can ask beforehand ({@link appliedOf}).
 */
import type { Sql } from "../db/connect.ts";
import { asService, type ServiceTx } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";

/** The answer to a copy whose replaced message the inbox has applied. */
export function alreadyApplied(service: string, messageId: string) {
  return {
    alreadyApplied: messageId,
    reason: `already applied: ${service} has message ${messageId} in its inbox`,
  };
}

/**
 * Claims the ids `envelope` supersedes in the inbox of `tx`'s service, in
 * its transaction: each id the inbox does not hold gets a row (200, outcome
 * `{ supersededBy }`), so that the replaced message, should it still
 * arrive, is a repeat of this copy. Returns the first of them that the
 * inbox holds as applied (200), or undefined when the copy may apply.
 *
 * Race-free without a lock: a replaced message being applied at this moment
 * has its inbox row in flight, and the claim's insert waits for that
 * transaction. If it commits, the claim skips the id and the second
 * statement (a snapshot of its own, READ COMMITTED) finds it applied; if
 * it rolls back, the claim takes the id. Whichever of the two commits
 * second fails on the inbox's key, or finds the id taken. An id held as
 * refused (422) applied nothing, and does not stop the copy: a corrected
 * copy of a refused message is what superseding is for.
 */
export async function claimSuperseded(
  { sql, service }: ServiceTx,
  envelope: Envelope,
): Promise<string | undefined> {
  const ids = envelope.supersedes ?? [];
  if (ids.length === 0) return undefined;
  const inbox = sql(`${service}.inbox`);
  const claimed = await sql<{ message_id: string }[]>`
    insert into ${inbox} (message_id, tenant_id, type, status, outcome)
    select id, ${envelope.tenantId}, ${envelope.type}, 200,
           ${sql.json({ supersededBy: envelope.messageId })}
      from unnest(${ids}::uuid[]) as id
     order by id
    on conflict (message_id) do nothing
    returning message_id`;
  const taken = new Set(claimed.map((r) => r.message_id));
  const held = ids.filter((id) => !taken.has(id));
  if (held.length === 0) return undefined;
  const applied = await sql<{ message_id: string }[]>`
    select message_id from ${inbox}
     where message_id = any(${held}::uuid[]) and status = 200`;
  const found = new Set(applied.map((r) => r.message_id));
  return held.find((id) => found.has(id));
}

/**
 * The first of `messageIds` that the inbox of `service` holds as applied
 * (200), read in a read-only transaction of `service` of its own (no other
 * role may read its inbox): what a sender asks before it supersedes a
 * message. A hint only, as the answer may change right after; the
 * receiver's {@link claimSuperseded} is what decides.
 */
export async function appliedOf(
  sql: Sql,
  service: string,
  tenantId: string,
  messageIds: readonly string[],
): Promise<string | undefined> {
  if (messageIds.length === 0) return undefined;
  const rows = await asService(
    sql,
    service,
    { tenantId },
    ({ sql }) =>
      sql<{ message_id: string }[]>`
        select message_id from ${sql(`${service}.inbox`)}
         where message_id = any(${messageIds as string[]}::uuid[])
           and status = 200`,
    { snapshot: true },
  );
  const found = new Set(rows.map((r) => r.message_id));
  return messageIds.find((id) => found.has(id));
}
