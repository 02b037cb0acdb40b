/**
 * The write scenario's measure of a leaner order schema, without changing
 * the bakery's: an order of three writes instead of eight. Its row carries
 * its lines (jsonb) and its idempotency key (a unique column), the outbox
 * row stands for the OrderPlaced event, and the capacity is taken as the
 * real order takes it (orders.day_counts, the same upsert as
 * services/orders/orders_sql.ts capacityTake, after the order row rather
 * than after the key). The same isolation as the real
 * order: the orders service's role, the sandbox, row-level security; the
 * same outbox write, the same wake-up, the same round trip.
 * It answers "would the schema change of bench/HISTORY.md (round of 997b4b9) meet
 * the write target?" with a figure.
 */
import type { Sql } from "../lib/db/connect.ts";
import { serviceStatement } from "../lib/db/service.ts";
import { outboxWrites, wakeInStatement } from "../lib/outbox/append.ts";
import {
  bySku,
  isOrderRefusal,
  ORDER_DOES_NOT_FIT,
} from "../services/orders/orders_sql.ts";
import { orderPlacedEnvelope, prepareOrder } from "../services/orders/place.ts";
import type { OrderSource } from "./orders.ts";

/**
 * Creates `bench.lean_orders` in the database of `sql` (its owner's
 * connection), with the sandbox policy and the orders role's rights.
 */
export async function createLeanOrders(sql: Sql): Promise<void> {
  await sql`create schema if not exists bench`;
  await sql`
    create table if not exists bench.lean_orders (
      id uuid primary key,
      tenant_id uuid not null,
      idempotency_key text not null,
      request_hash text not null,
      state text not null default 'placed'
        check (state in ('placed', 'payment_failed', 'paid', 'cancelled')),
      version int not null default 1,
      customer_name text not null,
      customer_email text not null,
      fulfilment text not null check (fulfilment in ('pickup', 'delivery')),
      day date not null,
      total_cents int not null check (total_cents >= 0),
      lines jsonb not null,
      payment_ref text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, idempotency_key)
    )`;
  await sql`select platform.enable_tenant_rls('bench.lean_orders')`;
  await sql`grant usage on schema bench to orders`;
  await sql`grant select, insert on bench.lean_orders to orders`;
}

/** Places the next order of `source` as a lean order (see the module). */
export async function placeLeanOrder(
  sql: Sql,
  source: OrderSource,
): Promise<void> {
  const { sandboxId, input } = await source.next();
  const { day, requestHash, orderId, lines: asked, totalCents, snapshot } =
    prepareOrder(input);
  const lines = bySku(asked);
  const envelope = orderPlacedEnvelope(sandboxId, snapshot);
  const skus = lines.map((l) => l.sku);
  const caps = lines.map((l) => l.capacity);
  let answer: { placed: boolean }[];
  try {
    answer = await serviceStatement(
      sql,
      "orders",
      { tenantId: sandboxId },
      (tx) => {
        const { sql } = tx;
        const placed = sql`exists (select from placed)`;
        return sql<{ placed: boolean }[]>`
        with placed as (
          insert into bench.lean_orders
                 (id, tenant_id, idempotency_key, request_hash,
                  customer_name, customer_email, fulfilment, day,
                  total_cents, lines)
          values (${orderId}, ${sandboxId}, ${input.idempotencyKey},
                  ${requestHash}, ${input.customer.name},
                  ${input.customer.email}, ${input.fulfilment}, ${day},
                  ${totalCents}, ${sql.json(snapshot.lines)})
          on conflict do nothing
          returning id
        ), line as (
          select * from unnest(${skus}::text[], ${
          lines.map((l) => l.qty)
        }::int[], ${caps}::int[]) with ordinality as l(sku, qty, cap, n)
        ), taken as (
          insert into orders.day_counts as d (tenant_id, day, sku, qty)
          select ${sandboxId}, ${day}, line.sku, line.qty
            from placed, line
           where line.qty <= line.cap
           order by line.n
          on conflict (tenant_id, day, sku) do update
             set qty = d.qty + excluded.qty
           where d.qty + excluded.qty
                 <= (${caps}::int[])[array_position(${skus}::text[], excluded.sku)]
          returning sku
        ), ${outboxWrites(tx, [envelope], placed)}
        select ${placed} as placed,
               case when ${placed}
                     and (select count(*) from taken) < ${lines.length}
                    then platform.refuse(${ORDER_DOES_NOT_FIT}, 'capacity')
               end as refused,
               ${wakeInStatement(tx, placed)} as woken`;
      },
    );
  } catch (error) {
    // The source never asks for more than a day holds.
    if (isOrderRefusal(error)) throw new Error("lean order refused");
    throw error;
  }
  // Every key is new: an order that wrote nothing would flatter the figure.
  if (!answer[0]?.placed) throw new Error("lean order not placed");
}
