/**
 * The idempotent receiver: apply a message once, in the receiver's own
 * transaction, keyed by its message id.
 */
import type { ServiceTx } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { NotYet, Refused } from "./errors.ts";

export interface Received {
  status: 200 | 422;
  /** The answer body; the same on every repeat. */
  body: Record<string, unknown>;
  /** True when the inbox had the message already and nothing changed. */
  duplicate: boolean;
}

/** What `apply` returns is stored and sent back as the answer body. */
export type Apply = (
  tx: ServiceTx,
  envelope: Envelope,
) => Promise<Record<string, unknown> | void>;

export interface ReceiveOptions {
  /** A message older than this that the inbox has not seen is refused. */
  replayHorizonDays: number;
}

/**
 * Records `envelope.messageId` in `<service>.inbox` and runs `apply` once.
 *
 * - Seen before: returns the stored answer, changes nothing.
 * - Older than the replay horizon and not seen: refused (422), recorded.
 * - `apply` throws NotYet: rethrown; the caller's transaction rolls back, so
 *   no inbox row remains and a later delivery tries again.
 * - `apply` throws Refused: its effect is rolled back to a savepoint, the
 *   refusal is recorded, and the answer is 422.
 */
export async function receive(
  tx: ServiceTx,
  envelope: Envelope,
  apply: Apply,
  options: ReceiveOptions,
): Promise<Received> {
  const { sql, service } = tx;
  const inbox = sql(`${service}.inbox`);
  const inserted = await sql`
    insert into ${inbox} (message_id, sandbox_id, type, status)
    values (${envelope.messageId}, ${envelope.sandboxId}, ${envelope.type}, 200)
    on conflict (message_id) do nothing
    returning message_id`;
  if (inserted.length === 0) {
    const [seen] = await sql<
      { status: 200 | 422; outcome: Record<string, unknown> }[]
    >`
      select status, outcome from ${inbox} where message_id = ${envelope.messageId}`;
    return { status: seen.status, body: seen.outcome, duplicate: true };
  }
  const ageDays = (Date.now() - Date.parse(envelope.occurredAt)) / 86_400_000;
  if (ageDays > options.replayHorizonDays) {
    return await refuse(
      tx,
      envelope,
      `older than the replay horizon of ${options.replayHorizonDays} days`,
    );
  }
  try {
    const body = await sql.savepoint((sp) =>
      apply({ ...tx, sql: sp }, envelope)
    );
    if (body && Object.keys(body).length > 0) {
      await sql`update ${inbox} set outcome = ${sql.json(body as never)}
        where message_id = ${envelope.messageId}`;
    }
    return { status: 200, body: body ?? {}, duplicate: false };
  } catch (error) {
    if (error instanceof NotYet) throw error;
    if (error instanceof Refused) {
      return await refuse(tx, envelope, error.message);
    }
    throw error;
  }
}

async function refuse(
  { sql, service }: ServiceTx,
  envelope: Envelope,
  reason: string,
): Promise<Received> {
  const body = { reason };
  await sql`
    insert into ${
    sql(`${service}.refusals`)
  } (sandbox_id, message_id, type, reason)
    values (${envelope.sandboxId}, ${envelope.messageId}, ${envelope.type}, ${reason})`;
  await sql`
    update ${sql(`${service}.inbox`)} set status = 422, outcome = ${
    sql.json(body)
  }
     where message_id = ${envelope.messageId}`;
  return { status: 422, body, duplicate: false };
}
