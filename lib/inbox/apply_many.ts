/**
 * A set-based receiver: the effects of a whole batch in one statement, and
 * the batch's inbox rows in one insert, where an `Apply` costs a statement
 * for each message. A receiver offers it beside its `apply`, as
 * `applyMany`; the batch receiver (batch.ts) tries it first.
 *
 * The statement reads the batch as a table, `batch`: one row a message,
 * with the envelope's `message_id`, `tenant_id`, `type`, `aggregate_id`,
 * `aggregate_version` and its place `n`, and the columns the receiver
 * gives for each message (values it read from the payload). It is built as
 *
 * ```
 * with batch as (...),
 *      effect as (<the receiver's data-modifying statement>),
 *      answers as (<the receiver's select: message_id, outcome>),
 *      recorded as (insert into <service>.inbox ...),
 *      noted as (insert into <service>.order_violations ...)
 * select message_id, outcome from recorded
 * ```
 *
 * The set is tried only where applying the messages one after another
 * could not differ from applying them together: no two of one aggregate,
 * none a copy (`supersedes`) or past the replay horizon. Whatever fails
 * there (a repeat's inbox row, an effect's error, `applyMany` throwing or
 * giving nothing, an answer missing) takes the batch back to its savepoint
 * and on to the message-at-a-time path, which judges each message as
 * before: a repeat gets its first answer, a refusal its row.
 */
import type { Fragment } from "../db/connect.ts";
import type { ServiceTx } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";

/** The types a receiver's column of `batch` may have. */
export type ColumnType =
  | "text"
  | "uuid"
  | "int"
  | "bigint"
  | "date"
  | "timestamptz"
  | "jsonb";

/** A batch's effects as one statement; see the module's comment. */
export interface ManyEffect {
  /**
   * The receiver's columns of `batch`: one row a message, in the batch's
   * order, keyed by column name.
   */
  rows: readonly Record<string, unknown>[];
  /** Each of those columns' type. */
  types: Record<string, ColumnType>;
  /** A data-modifying statement that reads `batch`; its rows are `effect`. */
  effect: Fragment;
  /**
   * Each message's answer, as rows of `message_id` and `outcome` (jsonb),
   * one a message; it may read `batch` and `effect`.
   */
  answers: Fragment;
}

/**
 * The effects of `envelopes`, all of one tenant, as one statement; or
 * nothing, when the receiver applies these one at a time (a type it does
 * not take in sets, say).
 */
export type ApplyMany = (
  tx: ServiceTx,
  envelopes: readonly Envelope[],
) => ManyEffect | undefined;

const COLUMN_NAME = /^[a-z][a-z0-9_]{0,62}$/;
const ENVELOPE_COLUMNS = new Set([
  "message_id",
  "tenant_id",
  "type",
  "aggregate_id",
  "aggregate_version",
  "n",
]);

/** True when `envelopes` may be applied as one set (see the module's comment). */
export function settable(
  envelopes: readonly Envelope[],
  pastHorizon: (e: Envelope) => boolean,
): boolean {
  if (envelopes.length < 2) return false;
  if (envelopes.some((e) => e.supersedes || pastHorizon(e))) return false;
  return new Set(envelopes.map((e) => e.aggregateId)).size ===
    envelopes.length;
}

/**
 * The statement that applies `effect` for `envelopes` and records their
 * inbox rows, returning each message's stored answer. It records a row of
 * `order_violations` for a message whose aggregate the inbox has applied
 * at a later version, as the single path does.
 */
export function manyStatement(
  tx: ServiceTx,
  envelopes: readonly Envelope[],
  effect: ManyEffect,
) {
  const { sql, service } = tx;
  const names = Object.keys(effect.types);
  if (effect.rows.length !== envelopes.length) {
    throw new TypeError("an applyMany gives one row a message");
  }
  for (const name of names) {
    if (!COLUMN_NAME.test(name) || ENVELOPE_COLUMNS.has(name)) {
      throw new TypeError(`not a column of batch: ${JSON.stringify(name)}`);
    }
  }
  // Fragments joined one by one: each column adds its array, its select
  // and its alias. jsonb travels as text (postgres.js sends no array of
  // objects); each type is a fragment of its own, never text spliced in.
  type Values = (string | number | null)[];
  const arrayOf: Record<ColumnType, (v: Values) => Fragment> = {
    text: (v) => sql`${v}::text[]`,
    uuid: (v) => sql`${v}::uuid[]`,
    int: (v) => sql`${v}::int[]`,
    bigint: (v) => sql`${v}::bigint[]`,
    date: (v) => sql`${v}::date[]`,
    timestamptz: (v) => sql`${v}::timestamptz[]`,
    jsonb: (v) => sql`${v.map((x) => JSON.stringify(x))}::text[]`,
  };
  let arrays = sql``;
  let selected = sql``;
  let aliases = sql``;
  for (const name of names) {
    const type = effect.types[name];
    const values = effect.rows.map((r) => r[name]) as Values;
    arrays = sql`${arrays}, ${arrayOf[type](values)}`;
    selected = type === "jsonb"
      ? sql`${selected}, b.${sql(name)}::jsonb as ${sql(name)}`
      : sql`${selected}, b.${sql(name)}`;
    aliases = sql`${aliases}, ${sql(name)}`;
  }
  const inbox = sql(`${service}.inbox`);
  return sql<{ message_id: string; outcome: Record<string, unknown> }[]>`
    with batch as (
      select b.message_id, b.tenant_id, b.type, b.aggregate_id,
             b.aggregate_version, b.n ${selected}
        from unnest(
          ${envelopes.map((e) => e.messageId)}::uuid[],
          ${envelopes.map((e) => e.tenantId)}::uuid[],
          ${envelopes.map((e) => e.type)}::text[],
          ${envelopes.map((e) => e.aggregateId)}::text[],
          ${envelopes.map((e) => e.aggregateVersion)}::int[]
          ${arrays})
          with ordinality
          as b(message_id, tenant_id, type, aggregate_id, aggregate_version
               ${aliases}, n)
    ), effect as (
      ${effect.effect}
    ), answers as (
      ${effect.answers}
    ), recorded as (
      insert into ${inbox} (message_id, tenant_id, type, status, outcome,
                            aggregate_id, aggregate_version)
      select b.message_id, b.tenant_id, b.type, 200, a.outcome,
             b.aggregate_id, b.aggregate_version
        from batch b join answers a on a.message_id = b.message_id
       order by b.n
      returning message_id, outcome
    ), noted as (
      -- The statement's snapshot holds none of its own inbox rows: what
      -- it finds was applied before, by another transaction.
      insert into ${sql(`${service}.order_violations`)}
        (tenant_id, message_id, type, aggregate_id, arrived_version,
         applied_version)
      select b.tenant_id, b.message_id, b.type, b.aggregate_id,
             b.aggregate_version, later.applied
        from batch b
        cross join lateral (
          select max(i.aggregate_version) as applied from ${inbox} i
           where i.aggregate_id = b.aggregate_id and i.tenant_id = b.tenant_id
             and i.status = 200) later
       where later.applied > b.aggregate_version
    )
    select message_id, outcome from recorded`;
}
