/**
 * The idempotent receiver, for a batch: several messages of one tenant
 * applied in one transaction of the receiver. The batch goes first under
 * one savepoint; should a message fail, the batch goes back to it and each
 * message gets a savepoint of its own with its inbox row. A message that
 * fails (not yet, refused, malformed, an error) then rolls back its
 * savepoint alone and gets its own answer; the rest commit together, once. Per message the contract is the
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
import { type ApplyMany, manyStatement, settable } from "./apply_many.ts";

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

/** A batch receiver's settings: a single receiver's, and its set path. */
export interface BatchOptions extends ReceiveOptions {
  /** The receiver's effects as one statement a batch (apply_many.ts). */
  applyMany?: ApplyMany;
}

/**
 * Applies `envelopes`, all of tenant `envelopes[0].tenantId`, in order, in
 * one transaction of `service`: as one set when the receiver has
 * `applyMany` and the batch allows it (apply_many.ts), else as below.
 * Answers come in the same order. A message that is not applied for a
 * reason that may pass (not yet, an error) holds back the later messages
 * of its aggregate in the batch (answered 409), so that they never
 * overtake it. Throws when the transaction itself fails
 * (its connection, its COMMIT): then nothing of the batch was applied, or
 * what was is answered from the inbox when the batch comes again.
 */
export async function receiveBatch(
  sql: Sql,
  service: string,
  envelopes: readonly Envelope[],
  apply: Apply,
  options: BatchOptions,
): Promise<BatchAnswer[]> {
  if (envelopes.length === 0) return [];
  const tenantId = envelopes[0].tenantId;
  if (envelopes.some((e) => e.tenantId !== tenantId)) {
    throw new TypeError("a batch holds the messages of one tenant");
  }
  // A set's statement reads its messages from unnest() of arrays: planned
  // for each batch, it took longer to plan than to run (bench/HISTORY.md).
  // The setting holds for the whole transaction, so the receiver's own
  // statements and the one-savepoint-a-message fallback plan once too;
  // theirs look rows up by key, where one plan serves every value.
  const genericPlans = options.applyMany !== undefined;
  return await asService(sql, service, { tenantId }, async (tx) => {
    const batch: Batch = {
      tx,
      envelopes,
      apply,
      options,
      answers: new Array(envelopes.length),
      held: new Map(),
    };
    if (!tracing && (await asSet(batch) || await whole(batch))) {
      return batch.answers;
    }
    // One span a message needs each message's own round trips.
    let next = 0;
    while (next < envelopes.length) {
      next = tracing ? await traced(batch, next) : await flight(batch, next);
    }
    return batch.answers;
  }, { genericPlans });
}

/** A batch being applied: its transaction, and the answers so far. */
interface Batch {
  tx: ServiceTx;
  envelopes: readonly Envelope[];
  apply: Apply;
  options: BatchOptions;
  answers: BatchAnswer[];
  /** Aggregates with a message held back, and that message. */
  held: Map<string, string>;
}

/**
 * The answer for a message of an aggregate held back earlier in the batch,
 * if it is one: it must not overtake the message that was not applied.
 */
function heldBack(batch: Batch, envelope: Envelope): BatchAnswer | undefined {
  const before = batch.held.get(envelope.aggregateId);
  if (!before) return undefined;
  return answer(envelope, 409, {
    reason:
      `not yet: message ${before} of the same aggregate, earlier in this batch, was not applied`,
  });
}

/** Notes `one` as the answer at `index`, holding its aggregate back if due. */
function settle(batch: Batch, index: number, one: BatchAnswer) {
  batch.answers[index] = one;
  if (one.status === 409 || one.status === 500) {
    batch.held.set(batch.envelopes[index].aggregateId, one.messageId);
  }
}

/**
 * The batch as one set (apply_many.ts): its effects in one statement, its
 * inbox rows in one insert, under the batch's savepoint. Returns false,
 * with nothing applied, when the set is not for this batch or anything of
 * it fails; the batch is then applied as below. The answers are checked
 * before the savepoint is released: a message without its inbox row must
 * not keep its effect.
 */
async function asSet(batch: Batch): Promise<boolean> {
  const { tx, envelopes, options } = batch;
  if (!options.applyMany) return false;
  if (!settable(envelopes, (e) => beyondHorizon(e, options))) return false;
  let statement;
  try {
    const effect = options.applyMany(tx, envelopes);
    if (!effect) return false;
    statement = manyStatement(tx, envelopes, effect);
  } catch {
    // A payload the set cannot read: each message is judged on its own.
    return false;
  }
  const savepoint = quiet(tx.sql`savepoint batch`.execute());
  const recorded = quiet(statement.execute());
  const settled = await Promise.allSettled([savepoint, recorded]);
  if (settled.every((r) => r.status === "fulfilled")) {
    const byId = new Map((await recorded).map((r) => [r.message_id, r]));
    if (envelopes.every((e) => byId.has(e.messageId))) {
      await tx.sql`release savepoint batch`;
      for (const [i, envelope] of envelopes.entries()) {
        batch.answers[i] = answer(
          envelope,
          200,
          byId.get(envelope.messageId)!.outcome,
        );
      }
      return true;
    }
  }
  await backOut(tx, "batch");
  return false;
}

/**
 * The batch as one unit, when every message applies: one SAVEPOINT for the
 * batch instead of one for each message (three statements a message become
 * one). Should any message fail (a repeat, a refusal, not yet, an error),
 * the batch goes back to its savepoint and returns false, to be applied a
 * message at a time, each in its own savepoint. Not for a batch with a
 * copy or a message past the replay horizon, which take statements of
 * their own.
 */
async function whole(batch: Batch): Promise<boolean> {
  const { tx, envelopes, options } = batch;
  if (envelopes.some((e) => e.supersedes || beyondHorizon(e, options))) {
    return false;
  }
  const sent: Promise<unknown>[] = [
    quiet(tx.sql`savepoint batch`.execute()),
  ];
  const records: Promise<{ outcome: Answer }[]>[] = [];
  let thrown = false;
  for (const envelope of envelopes) {
    let outcome: Awaited<ReturnType<Apply>>;
    try {
      outcome = await batch.apply(tx, envelope);
    } catch {
      thrown = true;
      break;
    }
    const record = quiet(
      inboxRecord(tx, envelope, outcome, { watchOrder: true }).execute(),
    );
    records.push(record);
    sent.push(record);
  }
  if (!thrown) sent.push(quiet(tx.sql`release savepoint batch`.execute()));
  const settled = await Promise.allSettled(sent);
  if (!thrown && settled.every((r) => r.status === "fulfilled")) {
    for (const [i, record] of records.entries()) {
      const [{ outcome }] = await record;
      batch.answers[i] = answer(envelopes[i], 200, outcome);
    }
    return true;
  }
  await backOut(tx, "batch");
  return false;
}

/**
 * Applies the batch from `from` on without waiting between messages: each
 * message's SAVEPOINT, effect, inbox row and RELEASE go out behind the
 * previous message's, so a batch whose receiver gives its effect as a
 * statement costs one round trip, not three a message. An `apply` that
 * reads first is waited for, inside its savepoint, as before.
 *
 * The first message that fails ends the flight. When a statement failed,
 * the transaction is aborted and everything sent after it failed with it:
 * ROLLBACK TO SAVEPOINT takes the transaction back to just before that
 * message (the later SAVEPOINTs never took), and the message is judged as
 * on its own. Returns where the next flight starts: after that message, so
 * the later ones go again.
 */
async function flight(batch: Batch, from: number): Promise<number> {
  const { tx, envelopes } = batch;
  const sent: { index: number; done: Promise<unknown[]> }[] = [];
  /** Where the flight stopped before sending a message's inbox row. */
  let stop: { index: number; error?: unknown; alone?: boolean } | undefined;
  for (let i = from; i < envelopes.length; i++) {
    const envelope = envelopes[i];
    const held = heldBack(batch, envelope);
    if (held) {
      batch.answers[i] = held;
      continue;
    }
    if (beyondHorizon(envelope, batch.options) || envelope.supersedes) {
      stop = { index: i, alone: true };
      break;
    }
    const savepoint = quiet(tx.sql`savepoint message`.execute());
    let outcome: Awaited<ReturnType<Apply>>;
    try {
      outcome = await batch.apply(tx, envelope);
    } catch (error) {
      stop = { index: i, error };
      break;
    }
    const record = quiet(
      inboxRecord(tx, envelope, outcome, { watchOrder: true }).execute(),
    );
    const release = quiet(tx.sql`release savepoint message`.execute());
    // Read once the flight is sent: quiet until then, for a failure may
    // come back while a later message's `apply` is still being awaited.
    const done = quiet(Promise.all([savepoint, record, release]));
    sent.push({ index: i, done });
  }
  const settled = await Promise.allSettled(sent.map((s) => s.done));
  for (const [k, { index }] of sent.entries()) {
    const result = settled[k];
    if (result.status === "fulfilled") {
      const [{ outcome }] = result.value[1] as { outcome: Answer }[];
      batch.answers[index] = answer(envelopes[index], 200, outcome);
      continue;
    }
    await backOut(tx, "message");
    settle(batch, index, await failed(tx, envelopes[index], result.reason));
    return index + 1;
  }
  if (!stop) return envelopes.length;
  const envelope = envelopes[stop.index];
  if (stop.alone) {
    settle(batch, stop.index, await receiveInBatch(batch, envelope));
  } else {
    await backOut(tx, "message");
    settle(batch, stop.index, await failed(tx, envelope, stop.error));
  }
  return stop.index + 1;
}

/** Back to the savepoint `name` (the batch's, or the failed message's), which then goes. */
async function backOut(tx: ServiceTx, name: "batch" | "message") {
  const savepoint = tx.sql(name);
  const rollback = quiet(
    tx.sql`rollback to savepoint ${savepoint}`.execute(),
  );
  await tx.sql`release savepoint ${savepoint}`;
  await rollback;
}

/** `p`, with its failure handled until someone awaits it. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

type Answer = Record<string, unknown>;

/** The batch from `from` on, a message at a time, each in its span. */
async function traced(batch: Batch, from: number): Promise<number> {
  const envelope = batch.envelopes[from];
  const held = heldBack(batch, envelope);
  if (held) {
    batch.answers[from] = held;
    return from + 1;
  }
  const service = batch.tx.service;
  const one = await inSpan(
    `apply ${service}`,
    applySpan(service, envelope),
    async (span) => {
      const one = await receiveInBatch(batch, envelope);
      span?.setAttributes({
        "http.response.status_code": one.status,
        "outbox.duplicate": one.duplicate ?? false,
      });
      return one;
    },
  );
  settle(batch, from, one);
  return from + 1;
}

/** One message in a savepoint of its own, waiting for each statement. */
async function receiveInBatch(
  { tx, apply, options }: Batch,
  envelope: Envelope,
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
    return await failed(tx, envelope, error);
  }
}

/**
 * The answer for a message whose savepoint was rolled back: the effect is
 * gone, the transaction goes on. A repeat failed on the inbox's key (or its
 * effect now refuses or says not yet): the first answer stands.
 */
async function failed(
  tx: ServiceTx,
  envelope: Envelope,
  error: unknown,
): Promise<BatchAnswer> {
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
          (message_id, tenant_id, type, status, outcome)
        values (${envelope.messageId}, ${envelope.tenantId}, ${envelope.type},
                422, ${sp.json(body)})
        on conflict (message_id) do nothing
        returning message_id, tenant_id, type
      )
      insert into ${sp(`${tx.service}.refusals`)}
        (tenant_id, message_id, type, reason)
      select tenant_id, message_id, type, ${reason} from i
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
