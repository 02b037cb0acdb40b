/**
 * The idempotent receiver: apply a message once, in the receiver's own
 * transaction, keyed by its message id.
 */
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import { asService, rolledBackBy, type ServiceTx } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { refusalOf } from "./errors.ts";
import { alreadyApplied, claimSuperseded } from "./supersedes.ts";

export interface Received {
  status: 200 | 422;
  /** The answer body; the same on every repeat. */
  body: Record<string, unknown>;
  /** True when the inbox had the message already and nothing changed. */
  duplicate: boolean;
}

/**
 * What `apply` returns is stored and sent back as the answer body. It may
 * also give its effect as one statement, unsent ({@link inStatement}): the
 * inbox then sends it with its own row and the COMMIT, and a receiver
 * that reads nothing first costs one round trip in all.
 */
export type Apply = (
  tx: ServiceTx,
  envelope: Envelope,
) =>
  | Record<string, unknown>
  | void
  | EffectStatement
  | Promise<Record<string, unknown> | void | EffectStatement>;

/** An effect as one statement and its answer; made by {@link inStatement}. */
export class EffectStatement {
  constructor(
    /** A data-modifying statement; its RETURNING rows are `effect`. */
    readonly statement: Fragment,
    /** The answer body: a jsonb expression that may read `effect`. */
    readonly answer: Fragment,
  ) {}
}

/**
 * A receiver's effect as one statement, for `apply` to return unsent. The
 * answer is `answer` (an object, or a jsonb expression that may read the
 * statement's RETURNING rows as `effect`); with `unchanged`, that is the
 * answer instead when the statement returns no row (a stale message that
 * changed nothing).
 *
 * @example
 * ```ts
 * return inStatement(
 *   tx,
 *   tx.sql`update billing.invoices set ... where version < ${v} returning 1`,
 *   { card: "confirmed" },
 *   { ignored: "stale" },
 * );
 * ```
 */
export function inStatement(
  { sql }: ServiceTx,
  statement: Fragment,
  answer: Record<string, unknown> | Fragment,
  unchanged?: Record<string, unknown>,
): EffectStatement {
  const json = (body: Record<string, unknown>) => jsonb(sql, body);
  // A fragment is a postgres.js query, which is a promise; a body is not.
  const changed = answer instanceof Promise
    ? answer as Fragment
    : json(answer as Record<string, unknown>);
  return new EffectStatement(
    statement,
    unchanged === undefined ? changed : sql`
      case when exists (select from effect) then ${changed}
           else ${json(unchanged)} end`,
  );
}

/** `body` as a jsonb value of a statement: an answer given in SQL. */
export function jsonb(sql: TxSql, body: Record<string, unknown>): Fragment {
  return sql`${sql.json(body as never)}::jsonb`;
}

export interface ReceiveOptions {
  /** A message older than this that the inbox has not seen is refused. */
  replayHorizonDays: number;
}

/** True when `envelope` is older than the replay horizon. */
export function beyondHorizon(envelope: Envelope, options: ReceiveOptions) {
  const ageDays = (Date.now() - Date.parse(envelope.occurredAt)) / 86_400_000;
  return ageDays > options.replayHorizonDays;
}

/** Why a message beyond the replay horizon is refused. */
export function horizonReason(options: ReceiveOptions) {
  return `older than the replay horizon of ${options.replayHorizonDays} days`;
}

/**
 * Records `envelope.messageId` in `<service>.inbox` and runs `apply` once,
 * in a transaction of `service` of its own, in few round trips: `apply`
 * runs first, then the inbox row with its answer is inserted in one
 * statement that goes out together with the COMMIT. Nothing else is sent:
 * no look-up before `apply`, no savepoint, no update of the answer after. A
 * receiver that awaits its one-statement effect costs two round trips
 * (BEGIN, role, tenant and the effect; the inbox row with the COMMIT); one
 * that gives it as a statement ({@link inStatement}) costs one: the effect
 * and the inbox row are one statement, sent with BEGIN and COMMIT, and the
 * answer is computed in it.
 *
 * The inbox row decides: when the insert finds the message id there
 * already (a repeat, or a concurrent delivery of the same message that
 * committed first), it fails, the transaction is rolled back, so the repeat
 * changes nothing, and the stored answer is returned (the inbox row counts
 * the repeat). Whatever ends the transaction otherwise (NotYet, Refused, an
 * error) is judged after the rollback, and a message the inbox has seen gets
 * its stored answer then too:
 *
 * - Refused, a ZodError (a malformed payload), or beyond the replay
 *   horizon: the refusal and the inbox row (422) are recorded in a second
 *   transaction; the effect is gone with the first. A crash between the two
 *   records nothing, and the retry refuses again.
 * - NotYet or an error: rethrown; no inbox row, a later delivery tries
 *   again.
 *
 * A corrected copy (`envelope.supersedes`) first claims the ids it replaces
 * ({@link claimSuperseded}, one or two statements more, for copies only).
 * When the inbox has applied one of them, `apply` is not called: the copy's
 * own row is recorded with the answer `{ alreadyApplied, reason }`, and the
 * copy is answered as a repeat, now and on every repeat of it.
 *
 * The inbox row keeps the message's aggregate and version, and the same
 * statement notes an order violation (see `orderWatch`; not for a copy
 * that applied nothing): the inbox, as
 * `platform.create_inbox` makes it (lib/inbox/migrations/), has
 * the columns and the table for both.
 */
export async function receiveOnce(
  sql: Sql,
  service: string,
  envelope: Envelope,
  apply: Apply,
  options: ReceiveOptions,
): Promise<Received> {
  if (beyondHorizon(envelope, options)) {
    return await recordRefusal(sql, service, envelope, horizonReason(options));
  }
  const scope = { tenantId: envelope.tenantId };
  let recorded: Promise<{ outcome: Record<string, unknown> }[]> | undefined;
  /** A copy's replaced message that this inbox had applied already. */
  let repeatOf: string | undefined;
  try {
    await asService(sql, service, scope, async (tx) => {
      // Only a copy pays for the claim; any other message goes as before.
      repeatOf = envelope.supersedes
        ? await claimSuperseded(tx, envelope)
        : undefined;
      const outcome = repeatOf
        ? alreadyApplied(service, repeatOf)
        : await apply(tx, envelope);
      // Sent, not awaited: the COMMIT goes out right behind it, in the same
      // round trip (and so do BEGIN and the effect, when `apply` gave it as
      // a statement and sent nothing itself). A message id already there
      // fails the insert (no ON CONFLICT), which aborts the transaction, so
      // the COMMIT rolls back, repeat effect included; the failure is the
      // insert's own, read from `recorded` once the transaction has ended.
      // The answer is 200 only if the insert and the commit both succeeded.
      recorded = inboxRecord(tx, envelope, outcome, {
        watchOrder: repeatOf === undefined,
      }).execute();
      recorded.catch(() => {}); // awaited below, after the transaction
    });
    const [row] = await recorded!;
    // A copy of a message applied before changed nothing: a repeat.
    return {
      status: 200,
      body: row.outcome,
      duplicate: repeatOf !== undefined,
    };
  } catch (error) {
    const refused = refusalOf(error);
    if (refused) {
      return await recordRefusal(sql, service, envelope, refused.message);
    }
    // A repeat (the insert's unique violation, or an effect that now fails,
    // refuses or says not yet): the first answer stands.
    const seen = await storedAnswer(sql, service, envelope);
    if (seen) return seen;
    // Rolled back by the statement sent without waiting: its error tells
    // why (an effect given as a statement fails there).
    throw await rolledBackBy(error, recorded);
  }
}

/**
 * The statement that records `envelope` in the inbox of `tx`'s service with
 * its answer, and runs the effect when `outcome` is one unsent
 * ({@link inStatement}); unsent itself. With `watchOrder`, the same
 * statement notes an order violation. A message id the inbox holds fails
 * its insert (no ON CONFLICT): the caller's transaction or savepoint rolls
 * back, effect included.
 */
export function inboxRecord(
  tx: ServiceTx,
  envelope: Envelope,
  outcome: Record<string, unknown> | void | EffectStatement,
  options: { watchOrder: boolean },
) {
  const { sql, service } = tx;
  const answer = outcome instanceof EffectStatement
    ? outcome.answer
    : sql`${sql.json((outcome ?? {}) as never)}`;
  return sql<{ outcome: Record<string, unknown> }[]>`
    with ${
    outcome instanceof EffectStatement
      ? sql`effect as (${outcome.statement}),`
      : sql``
  }
    recorded as (
      insert into ${sql(`${service}.inbox`)} (message_id, tenant_id, type,
        status, outcome, aggregate_id, aggregate_version)
      values (${envelope.messageId}, ${envelope.tenantId},
              ${envelope.type}, 200, ${answer}, ${envelope.aggregateId},
              ${envelope.aggregateVersion})
      returning outcome
    ) ${options.watchOrder ? sql`, ${orderWatch(tx, envelope)}` : sql``}
    select outcome from recorded`;
}

/**
 * An order violation, noted as a row of `<service>.order_violations` when
 * the inbox has already applied a later version of the envelope's aggregate:
 * the message arrived out of order. It is a CTE of the inbox's own insert,
 * so it is noted only when the message is new here (a repeat rolls it back)
 * and costs no round trip; the statement's snapshot does not see its own
 * inbox row. Two versions of one aggregate applied at the same moment in
 * two transactions do not see each other, so such a pair can go unnoted.
 */
function orderWatch({ sql, service }: ServiceTx, envelope: Envelope) {
  return sql`noted as (
    insert into ${sql(`${service}.order_violations`)}
      (tenant_id, message_id, type, aggregate_id, arrived_version,
       applied_version)
    select ${envelope.tenantId}, ${envelope.messageId}, ${envelope.type},
           ${envelope.aggregateId}, ${envelope.aggregateVersion}, applied
      from (select max(aggregate_version) as applied
              from ${sql(`${service}.inbox`)}
             where aggregate_id = ${envelope.aggregateId}
               and tenant_id = ${envelope.tenantId} and status = 200) later
     where applied > ${envelope.aggregateVersion})`;
}

/** The refusal and its inbox row (422), unless the inbox has the message. */
async function recordRefusal(
  sql: Sql,
  service: string,
  envelope: Envelope,
  reason: string,
): Promise<Received> {
  const body = { reason };
  const recorded = await asService(
    sql,
    service,
    { tenantId: envelope.tenantId },
    ({ sql }) =>
      sql`
        with i as (
          insert into ${sql(`${service}.inbox`)}
            (message_id, tenant_id, type, status, outcome)
          values (${envelope.messageId}, ${envelope.tenantId}, ${envelope.type},
                  422, ${sql.json(body)})
          on conflict (message_id) do nothing
          returning message_id, tenant_id, type
        )
        insert into ${sql(`${service}.refusals`)}
          (tenant_id, message_id, type, reason)
        select tenant_id, message_id, type, ${reason} from i
        returning message_id`,
  );
  if (recorded.length > 0) return { status: 422, body, duplicate: false };
  const seen = await storedAnswer(sql, service, envelope);
  if (!seen) {
    throw new Error(`message ${envelope.messageId} was seen, but not found`);
  }
  return seen;
}

/**
 * The answer the inbox holds for this message, if it has it: a repeat,
 * counted on the inbox row (`repeats`) as it is answered.
 */
async function storedAnswer(
  sql: Sql,
  service: string,
  envelope: Envelope,
): Promise<Received | undefined> {
  const [seen] = await asService(
    sql,
    service,
    { tenantId: envelope.tenantId },
    ({ sql }) =>
      sql<{ status: 200 | 422; outcome: Record<string, unknown> }[]>`
        update ${sql(`${service}.inbox`)} set repeats = repeats + 1
         where message_id = ${envelope.messageId}
        returning status, outcome`,
  );
  return seen
    ? { status: seen.status, body: seen.outcome, duplicate: true }
    : undefined;
}
