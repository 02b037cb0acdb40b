/**
 * The console's search box: one query finds an order by its id, its short
 * number (the six hex digits people quote, as on the receipt), its
 * receipt's number or its customer's email; a message by its id; a delivery
 * by its id or by words of its last error. Each kind is one look-up through
 * an index of its own, on columns stored for it where the sandbox policy
 * would keep an index from being used (migrations/0005_console_ops.sql),
 * inside the
 * visitor's sandbox, so a search costs the same with a million rows of
 * history as with ten.
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { queueOfDelivery, type ReadAt, readServices } from "../databases.ts";
import { formatEuros, serviceLabel } from "../../format.ts";
import { type SearchResult, searchResultSchema } from "./contracts.ts";

export type { SearchResult } from "./contracts.ts";

const resultsSchema = z.array(searchResultSchema);

/** At most this many results of each kind. */
const PER_KIND = 10;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHORT = /^#?[0-9a-f]{6}$/i;
const RECEIPT = /^R-\d{8}-[0-9A-F]{6}$/i;

// deno-lint-ignore no-explicit-any
type Row = any;

/** `s` as a LIKE pattern that matches itself only. */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function orderResult(o: Row): SearchResult {
  return {
    kind: "order",
    id: o.id,
    summary: `Order ${o.id.slice(-6).toUpperCase()}, ${o.state}, ${
      formatEuros(o.total_cents)
    }, ${o.customer_email}`,
    href: `/orders/${o.id}`,
  };
}

async function orders(
  at: ReadAt,
  sandboxId: string,
  q: string,
): Promise<Row[]> {
  const columns = (sql: TxSql) => sql`id, state, total_cents, customer_email`;
  if (UUID.test(q)) {
    return await at(
      "orders",
      (sql) =>
        sql<Row[]>`select ${columns(sql)} from orders.orders where id = ${q}`,
    );
  }
  if (SHORT.test(q)) {
    return await at("orders", (sql) =>
      sql<Row[]>`
      select ${columns(sql)} from orders.orders
       where number = ${q.replace("#", "").toUpperCase()}
       limit ${PER_KIND}`);
  }
  if (RECEIPT.test(q)) {
    // The receipt in the receipts' database, then its order in the orders'.
    const ids = (await at("receipts", (sql) =>
      sql<{ order_id: string }[]>`
      select order_id from receipts.receipts
       where number = ${q.toUpperCase()}`)).map((r) => r.order_id);
    if (ids.length === 0) return [];
    return await at(
      "orders",
      (sql) =>
        sql<Row[]>`select ${columns(sql)} from orders.orders
                  where id = any(${ids}::uuid[])`,
    );
  }
  if (q.includes("@")) {
    // A prefix of the address: what people type before they finish it.
    // The sandbox is named here too, so that the index leads with it; ^@
    // (starts with) is leakproof and becomes a range of that index.
    return await at("orders", (sql) =>
      sql<Row[]>`
      select ${columns(sql)} from orders.orders
       where tenant_id = ${sandboxId} and email_key ^@ ${q.toLowerCase()}
       order by email_key limit ${PER_KIND}`);
  }
  return [];
}

async function messages(sql: TxSql, q: string): Promise<SearchResult[]> {
  if (!UUID.test(q)) return [];
  const rows = await sql`
    select m.message_id, m.type, m.aggregate_id, m.source,
           (select min(d.id) from queue.deliveries d
             where d.message_id = m.message_id) as delivery_id
      from queue.messages m where m.message_id = ${q}`;
  return rows.map((m) => ({
    kind: "message",
    id: m.message_id,
    summary: `${m.type} from ${m.source} about order ${
      String(m.aggregate_id).slice(-6).toUpperCase()
    }`,
    href: m.delivery_id
      ? `/console/deliveries/${m.delivery_id}`
      : `/console/deliveries?orderId=${m.aggregate_id}`,
  }));
}

async function deliveries(sql: TxSql, q: string): Promise<SearchResult[]> {
  const columns = sql`id, type, subscriber, state, last_error`;
  let rows: Row[] = [];
  if (/^\d{1,18}$/.test(q)) {
    rows = await sql`select ${columns} from queue.deliveries where id = ${q}`;
  } else if (q.length >= 3 && !UUID.test(q)) {
    // Words of an error: each must appear. One ILIKE per word, which the
    // trigram index answers (it does not take an array of patterns). The
    // matches are found first and sorted after (a materialized CTE): with
    // ORDER BY id LIMIT on the table itself, PostgreSQL walked the primary
    // key from the newest delivery, a million rows of history without an
    // error, for words that match none (0.6 s, bench console).
    const words = q.split(/\s+/).filter(Boolean).slice(0, 5);
    const each = words.map((w) =>
      sql`and last_error ilike ${`%${escapeLike(w)}%`}`
    ).reduce((all, one) => sql`${all} ${one}`, sql``);
    rows = await sql`
      with found as materialized (
        select ${columns} from queue.deliveries
         where last_error is not null ${each}
      )
      select * from found order by id desc limit ${PER_KIND}`;
  }
  return rows.map((d) => ({
    kind: "delivery",
    id: String(d.id),
    summary: `${d.type} to ${serviceLabel(d.subscriber)}, ${
      d.state.replace("_", " ")
    }${d.last_error ? `: ${d.last_error}` : ""}`,
    href: `/console/deliveries/${d.id}`,
  }));
}

/** Everything in the sandbox that `query` names; empty for a blank query. */
export async function search(
  sql: Sql,
  sandboxId: string,
  query: string,
): Promise<SearchResult[]> {
  const q = query.trim();
  if (!q) return [];
  return await readServices(sql, sandboxId, async (at, queues) => {
    // Split mode: each queue is searched in its own database; a delivery
    // named by its id only in the queue the id belongs to.
    const byId = /^\d{1,18}$/.test(q)
      ? [queueOfDelivery(Number(q)) ?? queues[0]]
      : queues;
    const [o, m, d] = await Promise.all([
      orders(at, sandboxId, q),
      Promise.all(queues.map((queue) => at(queue, (sql) => messages(sql, q)))),
      Promise.all(byId.map((queue) => at(queue, (sql) => deliveries(sql, q)))),
    ]);
    const found = d.flat();
    if (d.length > 1) found.sort((a, b) => Number(b.id) - Number(a.id));
    return resultsSchema.parse([
      ...o.map(orderResult),
      ...m.flat(),
      ...found.slice(0, PER_KIND),
    ]);
  });
}
