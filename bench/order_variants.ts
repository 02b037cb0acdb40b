/**
 * The bakery's order transaction as the benchmark varies it, built from the
 * orders service's public pieces (prepareOrder, orderPlacedEnvelope,
 * capacityTake, serviceStatement) and SQL of its own: the same statement as
 * services/orders/orders_sql.ts newOrderStatement (the idempotency key, the
 * capacity, the order, its line, its event; one round trip with its COMMIT,
 * the orders role, the sandbox and its row-level security), where the
 * outbox row and its wake-up are replaced by `tail`:
 *
 * - nothing: what the order costs without its outbox (the write scenario's
 *   `orders_8_without_outbox`);
 * - `graphile_worker.add_job` with the OrderPlaced envelope as payload: the
 *   order as a graphile-worker user would write it (the peer scenario);
 * - nothing, and a statement of the caller's beside it in the same
 *   transaction: pg-boss's `send` (the peer_pgboss scenario;
 *   {@link placeWithSend}, two round trips);
 * - one row of the envelope in `bench.bare_outbox`, a table with a primary
 *   key and nothing else (no other index, no state, no wake-up):
 *   the floor of any outbox that writes its message in the order's
 *   transaction (the write scenario's `orders_8_bare_row`);
 * - the outbox row alone, in `orders.outbox` itself (its indexes, checks
 *   and policy), without the wake-up: what the wake-up costs beside the
 *   row (the write scenario's `orders_8_outbox_row_alone`).
 *
 * If newOrderStatement changes, this copy must follow it; the write
 * scenario's `orders_8` and `orders_8_without_outbox` are read side by side.
 */
import type { Fragment, Sql } from "../lib/db/connect.ts";
import {
  asService,
  serviceStatement,
  type ServiceTx,
} from "../lib/db/service.ts";
import type { Envelope } from "../lib/outbox/envelope.ts";
import {
  bySku,
  capacityTake,
  isOrderRefusal,
} from "../services/orders/orders_sql.ts";
import { orderPlacedEnvelope, prepareOrder } from "../services/orders/place.ts";
import type { OrderSource } from "./orders.ts";

/** What takes the outbox's place: a CTE list to follow a comma, and a value. */
type Tail = (
  tx: ServiceTx,
  envelope: Envelope,
  placed: Fragment,
) => { ctes: Fragment | null; value: Fragment };

/** No outbox row, no wake-up. */
const NOTHING: Tail = (tx) => ({ ctes: null, value: tx.sql`null::int` });

/**
 * graphile-worker's `add_job` for a placed order, its payload the envelope
 * the outbox row would carry (its own NOTIFY is its wake-up).
 */
const ADD_JOB: Tail = (tx, envelope, placed) => ({
  ctes: tx.sql`job as (
      select graphile_worker.add_job('order_placed', ${
    tx.sql.json(envelope as never)
  }::json) where ${placed})`,
  value: tx.sql`(select count(*)::int from job)`,
});

/**
 * The envelope as one row of `table`, written with the order, and nothing
 * else: no wake-up.
 */
function rowIn(table: "bench.bare_outbox" | "orders.outbox"): Tail {
  return (tx, envelope, placed) => ({
    ctes: tx.sql`outbox_row as (
      insert into ${tx.sql(table)} (tenant_id, message_id, type, envelope)
      select ${envelope.tenantId}, ${envelope.messageId}, ${envelope.type},
             ${tx.sql.json(envelope as never)}
       where ${placed}
      returning id)`,
    value: tx.sql`(select count(*)::int from outbox_row)`,
  });
}

/** The envelope in `bench.bare_outbox` (see {@link createBareOutbox}). */
const BARE_ROW = rowIn("bench.bare_outbox");

/**
 * The envelope as a row of `orders.outbox`, its indexes, checks and policy
 * as lib/outbox writes it, without the rest of the outbox.
 */
const OUTBOX_ROW = rowIn("orders.outbox");

/** An order from `source`, ready for its statement. */
async function prepared(source: OrderSource) {
  const { sandboxId, input } = await source.next();
  const { day, requestHash, orderId, lines, totalCents, snapshot } =
    prepareOrder(input);
  return {
    sandboxId,
    input,
    day,
    requestHash,
    orderId,
    totalCents,
    envelope: orderPlacedEnvelope(sandboxId, snapshot),
    sorted: bySku(lines),
  };
}

type Prepared = Awaited<ReturnType<typeof prepared>>;

/** The order statement with `tail` in place of the outbox, not yet sent. */
function orderStatement(tx: ServiceTx, order: Prepared, tail: Tail) {
  const { sql } = tx;
  const { sandboxId, input, day, requestHash, orderId, totalCents, sorted } =
    order;
  const placed = sql`exists (select from placed)`;
  const t = tail(tx, order.envelope, placed);
  const ctes = t.ctes ? sql`, ${t.ctes}` : sql``;
  return sql<{ claimed: boolean }[]>`
        with claim as (
          insert into orders.commands_seen
                 (tenant_id, idempotency_key, request_hash, order_id)
          values (${sandboxId}, ${input.idempotencyKey}, ${requestHash},
                  ${orderId})
          on conflict do nothing
          returning order_id
        ), line as (
          select * from unnest(${sorted.map((l) => l.sku)}::text[],
                               ${sorted.map((l) => l.qty)}::int[],
                               ${sorted.map((l) => l.capacity)}::int[],
                               ${sorted.map((l) => l.name)}::text[],
                               ${sorted.map((l) => l.unitCents)}::int[])
                   with ordinality as l(sku, qty, cap, name, unit_cents, n)
        ), taken as (
          ${capacityTake(tx, sandboxId, day, sorted)}
        ), placed as (
          insert into orders.orders (id, tenant_id, customer_name,
                                     customer_email, fulfilment, day,
                                     total_cents)
          select ${orderId}, ${sandboxId}, ${input.customer.name},
                 ${input.customer.email}, ${input.fulfilment}, ${day},
                 ${totalCents}
           where (select count(*) from taken) = ${sorted.length}
          returning id
        ), placed_lines as (
          insert into orders.lines (order_id, sku, tenant_id, name, qty,
                                    unit_cents)
          select placed.id, line.sku, ${sandboxId}, line.name, line.qty,
                 line.unit_cents
            from placed, line
        ), placed_event as (
          insert into orders.events (tenant_id, order_id, type, version,
                                     message_id)
          select ${sandboxId}, placed.id, 'OrderPlaced', 1,
                 ${order.envelope.messageId}
            from placed
        )${ctes}
        select exists (select from claim) as claimed,
               ${t.value} as tail`;
}

/** Throws when the order was refused or not placed. */
async function placed(answer: Promise<{ claimed: boolean }[]>) {
  let rows: { claimed: boolean }[];
  try {
    rows = await answer;
  } catch (error) {
    // The source never asks for more than a day holds.
    if (isOrderRefusal(error)) throw new Error("bench order refused");
    throw error;
  }
  // Every key is new: an order that wrote nothing would flatter the figure.
  if (!rows[0]?.claimed) throw new Error("bench order not placed");
}

async function placeWith(sql: Sql, source: OrderSource, tail: Tail) {
  const order = await prepared(source);
  await placed(
    serviceStatement(
      sql,
      "orders",
      { tenantId: order.sandboxId },
      (tx) => orderStatement(tx, order, tail),
    ),
  );
}

/** The order without its outbox row and the wake-up. */
export function placeWithoutOutbox(sql: Sql, source: OrderSource) {
  return placeWith(sql, source, NOTHING);
}

/** The order with its envelope in `bench.bare_outbox` instead. */
export function placeWithBareRow(sql: Sql, source: OrderSource) {
  return placeWith(sql, source, BARE_ROW);
}

/** The order with its outbox row alone: no wake-up. */
export function placeWithOutboxRowAlone(sql: Sql, source: OrderSource) {
  return placeWith(sql, source, OUTBOX_ROW);
}

/**
 * Creates `bench.bare_outbox` in the database of `sql` (its owner's
 * connection): an outbox reduced to what any outbox needs, the message and
 * an order to read it in (the primary key), under the sandbox policy the
 * real outboxes have, and the orders role's rights to insert into it and
 * read back what it inserted.
 */
export async function createBareOutbox(sql: Sql): Promise<void> {
  await sql`create schema if not exists bench`;
  await sql`
    create table if not exists bench.bare_outbox (
      id bigint generated always as identity primary key,
      tenant_id uuid not null,
      message_id uuid not null,
      type text not null,
      envelope jsonb not null
    )`;
  await sql`select platform.enable_tenant_rls('bench.bare_outbox')`;
  await sql`grant usage on schema bench to orders`;
  await sql`grant select, insert on bench.bare_outbox to orders`;
}

/** The order with graphile-worker's add_job in place of its outbox row. */
export function placeWithAddJob(sql: Sql, source: OrderSource) {
  return placeWith(sql, source, ADD_JOB);
}

/**
 * Lets the orders service's role add graphile-worker jobs (its schema
 * installed in the database of `sql`, the owner's connection).
 * graphile-worker turns row-level security on for its private tables with
 * no policy, so that only their owner reaches them: a policy lets the
 * orders role through, and add_job runs as graphile-worker wrote it.
 */
export async function grantAddJob(sql: Sql): Promise<void> {
  const tables = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'graphile_worker' and c.relkind = 'r'
       and c.relrowsecurity`;
  for (const { name } of tables) {
    await sql`create policy bench_orders on ${sql(`graphile_worker.${name}`)}
                to orders using (true) with check (true)`;
  }
  await sql`grant usage on schema graphile_worker to orders`;
  await sql`grant select, insert, update, delete
              on all tables in schema graphile_worker to orders`;
  await sql`grant usage, select on all sequences in schema graphile_worker
              to orders`;
  await sql`grant execute on all functions in schema graphile_worker
              to orders`;
}

/**
 * The order without its outbox row and the wake-up, and in the same
 * transaction a statement of the caller's in their place: `send` is given
 * the transaction and the OrderPlaced envelope (the peer_pgboss scenario's
 * pg-boss `send`). The order statement and what `send` sends leave
 * together, neither waiting for the other's answer, then COMMIT: two round
 * trips. The order is checked once both have answered; should it not have
 * been placed, the transaction rolls back.
 */
export async function placeWithSend(
  sql: Sql,
  source: OrderSource,
  send: (tx: ServiceTx, envelope: Envelope) => Promise<unknown>,
): Promise<void> {
  const order = await prepared(source);
  await placed(
    asService(sql, "orders", { tenantId: order.sandboxId }, async (tx) => {
      const statement = orderStatement(tx, order, NOTHING).execute();
      // Both are read below; the order's error first, as it came first.
      const [rows] = await Promise.all([statement, send(tx, order.envelope)]);
      if (!rows[0]?.claimed) throw new Error("bench order not placed");
      return rows;
    }),
  );
}
