/**
 * The idempotent receiver, for a batch: several messages of one tenant
 * applied in one transaction of the receiver, each in a savepoint of its
 * own with its inbox row. A message that fails (not yet, refused,
 * malformed, an error) rolls back its savepoint alone and gets its own
 * answer; the rest commit together, once. Per message the contract is the
 * single receiver's ({@link receiveOnce}): the inbox row and the effect
 * commit together or not at all, and a repeat gets the first answer.
 *
 * Why: a receiver's commit waits for the disk, and one commit per message
 * was most of what a delivery cost once the request itself was in
 * process (bench/README.md).
 */
import { inSpan, tracing } from "../trace/mod.ts";
import { applySpan } from "./handler.ts";
import type { Sql } from "../db/connect.ts";
import { asService, type ServiceTx } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { NotYet, refusalOf } from "./errors.ts";
import {
  type Apply,
  beyondHorizon,
  horizonReason,
  inboxRecord,
  type ReceiveOptions,
} from "./receive.ts";
import { alreadyApplied, claimSuperseded } from "./supersedes.ts";

/** One message's answer within a batch. */
export interface BatchAnswer {
  messageId: string;
  /** 200 applied (or a repeat), 409 not yet, 422 refused, 500 failed. */
  status: 200 | 409 | 422 | 500;
  body: Record<string, unknown>;
  /** True when the inbox had the message already and nothing changed. */
  duplicate: boolean;
  /** For 500: what failed, for the receiver's log. */
  error?: unknown;
}

/**
 * Applies `envelopes`, all of tenant `envelopes[0].sandboxId`, in order, in
 * one transaction of `service`. Answers come in the same order. A message
 * that is not applied for a reason that may pass (not yet, an error) holds
 * back the later messages of its aggregate in the batch (answered 409), so
 * that they never overtake it. Throws when the transaction itself fails
 * (its connection, its COMMIT): then nothing of the batch was applied, or
 * what was is answered from the inbox when the batch comes again.
 */
export async function receiveBatch(
  sql: Sql,
  service: string,
  envelopes: readonly Envelope[],
  apply: Apply,
  options: ReceiveOptions,
): Promise<BatchAnswer[]> {
  if (envelopes.length === 0) return [];
  const sandboxId = envelopes[0].sandboxId;
  if (envelopes.some((e) => e.sandboxId !== sandboxId)) {
    throw new TypeError("a batch holds the messages of one tenant");
  }
  return await asService(sql, service, { sandboxId }, async (tx) => {
    const answers: BatchAnswer[] = [];
    /** Aggregates with a message held back, and that message. */
    const held = new Map<string, string>();
    for (const envelope of envelopes) {
      const before = held.get(envelope.aggregateId);
      if (before) {
        answers.push(answer(envelope, 409, {
          reason:
            `not yet: message ${before} of the same aggregate, earlier in this batch, was not applied`,
        }));
        continue;
      }
      const receive = () => receiveInBatch(tx, envelope, apply, options);
      const one = !tracing ? await receive() : await inSpan(
        `apply ${service}`,
        applySpan(service, envelope),
        async (span) => {
          const one = await receive();
          span?.setAttributes({
            "http.response.status_code": one.status,
            "outbox.duplicate": one.duplicate ?? false,
          });
          return one;
        },
      );
      if (one.status === 409 || one.status === 500) {
        held.set(envelope.aggregateId, envelope.messageId);
      }
      answers.push(one);
    }
    return answers;
  });
}

async function receiveInBatch(
  tx: ServiceTx,
  envelope: Envelope,
  apply: Apply,
  options: ReceiveOptions,
): Promise<BatchAnswer> {
  if (beyondHorizon(envelope, options)) {
    return await refuseIn(tx, envelope, horizonReason(options));
  }
  try {
    return await tx.sql.savepoint(async (sp) => {
      const inner: ServiceTx = { ...tx, sql: sp };
      const repeatOf = envelope.supersedes
        ? await claimSuperseded(inner, envelope)
        : undefined;
      const outcome = repeatOf
        ? alreadyApplied(tx.service, repeatOf)
        : await apply(inner, envelope);
      const [row] = await inboxRecord(inner, envelope, outcome, {
        watchOrder: repeatOf === undefined,
      });
      return answer(envelope, 200, row.outcome, repeatOf !== undefined);
    });
  } catch (error) {
    // The savepoint is rolled back: the effect is gone, the transaction
    // goes on. A repeat failed on the inbox's key (or its effect now
    // refuses or says not yet): the first answer stands.
    const seen = await storedAnswerIn(tx, envelope);
    if (seen) return seen;
    const refused = refusalOf(error);
    if (refused) return await refuseIn(tx, envelope, refused.message);
    if (error instanceof NotYet) {
      return answer(envelope, 409, { reason: error.message });
    }
    if (!isStatementError(error)) throw error;
    return {
      ...answer(envelope, 500, { error: (error as Error).message }),
      error,
    };
  }
}

/**
 * An error of the message's own making (its effect's statement, or its
 * code), after which the transaction goes on; not the connection's or the
 * server's going away, which ends the whole batch.
 */
function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== "string") return true;
  // SQLSTATE classes 08 (connection), 57 (operator intervention) and 53
  // (insufficient resources) are the server's; postgres.js's own codes
  // (CONNECTION_CLOSED, ...) are not SQLSTATEs.
  if (!/^[0-9A-Z]{5}$/.test(code)) return false;
  return !/^(08|57|53)/.test(code);
}

function answer(
  envelope: Envelope,
  status: BatchAnswer["status"],
  body: Record<string, unknown>,
  duplicate = false,
): BatchAnswer {
  return { messageId: envelope.messageId, status, body, duplicate };
}

/** The refusal and its inbox row (422), in a savepoint of the batch. */
async function refuseIn(
  tx: ServiceTx,
  envelope: Envelope,
  reason: string,
): Promise<BatchAnswer> {
  const body = { reason };
  const recorded = await tx.sql.savepoint((sp) =>
    sp`
      with i as (
        insert into ${sp(`${tx.service}.inbox`)}
          (message_id, sandbox_id, type, status, outcome)
        values (${envelope.messageId}, ${envelope.sandboxId}, ${envelope.type},
                422, ${sp.json(body)})
        on conflict (message_id) do nothing
        returning message_id, sandbox_id, type
      )
      insert into ${sp(`${tx.service}.refusals`)}
        (sandbox_id, message_id, type, reason)
      select sandbox_id, message_id, type, ${reason} from i
      returning message_id`
  );
  if (recorded.length > 0) return answer(envelope, 422, body);
  const seen = await storedAnswerIn(tx, envelope);
  if (!seen) {
    throw new Error(`message ${envelope.messageId} was seen, but not found`);
  }
  return seen;
}

/** The inbox's answer for a message it holds, counted as a repeat. */
async function storedAnswerIn(
  tx: ServiceTx,
  envelope: Envelope,
): Promise<BatchAnswer | undefined> {
  const [seen] = await tx.sql<
    { status: 200 | 422; outcome: Record<string, unknown> }[]
  >`
    update ${tx.sql(`${tx.service}.inbox`)} set repeats = repeats + 1
     where message_id = ${envelope.messageId}
    returning status, outcome`;
  return seen ? answer(envelope, seen.status, seen.outcome, true) : undefined;
}
