/**
 * Rows made straight in the tables with INSERT ... SELECT generate_series, as
 * fast as the server goes: a relay backlog, deliveries of OrderPaid ready
 * for the six receivers, and a console's history. The envelopes are valid
 * (the receivers parse them with the same schemas as real ones).
 *
 * Everything runs as the superuser, which row-level security does not bind.
 */
import type { Sql, TxSql } from "../lib/db/connect.ts";
import { RECEIVERS } from "../services/routing.ts";

/** Makes `n` sandboxes numbered 0..n-1 in a temp table `seed_sandboxes`. */
async function sandboxes(tx: TxSql, n: number): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    insert into platform.tenants (name)
    select 'bench ' || g from generate_series(0, ${n - 1}) g returning id`;
  const ids = rows.map((r) => r.id);
  await tx`create temp table seed_sandboxes on commit drop as
    select s.id, (s.n - 1)::int as n
      from unnest(${ids}::uuid[]) with ordinality as s(id, n)`;
  return ids;
}

/** A temp table `seed_sandboxes` of sandboxes made elsewhere, in order. */
async function knownSandboxes(tx: TxSql, ids: readonly string[]) {
  await tx`create temp table seed_sandboxes on commit drop as
    select s.id, (s.n - 1)::int as n
      from unnest(${ids as string[]}::uuid[]) with ordinality as s(id, n)`;
}

/**
 * Makes the ids of {@link seedOrders} the same in every database that
 * seeds with it: the random bits come from the salt and g instead.
 */
interface Same {
  salt: string;
  epochMs: number;
}

/**
 * A temp table `seed` of `n` orders: g, message_id, order_id, tenant_id
 * (the sandboxes round robin) and a receiver (the six round robin). Message
 * ids are UUIDv7 in the order of g, as lib/outbox makes them: 48 bits of
 * milliseconds (ten messages a millisecond), version 7, the variant, and
 * random bits. Random (v4) ids would scatter every index insert.
 */
async function seedOrders(
  tx: TxSql,
  n: number,
  sandboxCount: number,
  same?: Same,
) {
  const bits = (k: string) =>
    same ? tx`md5(${same.salt} || ${k}::text || g)` : tx`md5(random()::text)`;
  const epochMs = same
    ? tx`${same.epochMs}::bigint`
    : tx`(extract(epoch from now()) * 1000)::bigint`;
  const orderId = same ? tx`${bits("o")}::uuid` : tx`gen_random_uuid()`;
  await tx`create temp table seed on commit drop as
    select g,
           (lpad(to_hex(${epochMs} + g / 10), 12, '0')
            || '7' || substr(${bits("a")}, 1, 3)
            || to_hex(8 + (('x' || substr(${
    bits("v")
  }, 1, 1))::bit(4)::int % 4))
            || substr(${bits("b")}, 1, 15))::uuid as message_id,
           ${orderId} as order_id,
           s.id as tenant_id,
           (${[...RECEIVERS]}::text[])[1 + g % 6] as subscriber
      from generate_series(1, ${n}) g
      join seed_sandboxes s on s.n = g % ${sandboxCount}`;
  await tx`create index on seed (g)`;
}

/**
 * An order row for each `seed` row, for the console's search: 50,000
 * customers' addresses, spread over the sandboxes.
 */
async function seedOrderRows(tx: TxSql) {
  await tx`
    insert into orders.orders (id, tenant_id, customer_name, customer_email,
                               fulfilment, day, total_cents)
    select order_id, tenant_id, 'Bench Customer',
           'customer' || (g % 50000) || '@example.com', 'delivery',
           current_date, 350
      from seed order by g`;
}

/** The SQL of an order envelope of `type`, built from the `seed` row. */
function envelopeSql(tx: TxSql, type: string, version: number, paid: boolean) {
  return tx`jsonb_build_object(
    'messageId', seed.message_id, 'type', ${type}::text, 'schemaVersion', 1,
    'aggregateId', seed.order_id, 'aggregateVersion', ${version}::int,
    'tenantId', seed.tenant_id,
    'occurredAt', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'payload', jsonb_build_object(
      'orderId', seed.order_id,
      'lines', jsonb_build_array(jsonb_build_object('sku', 'cardamom-bun',
        'name', 'Cardamom bun', 'qty', 1, 'unitCents', 350)),
      'totalCents', 350,
      'customer', jsonb_build_object('name', 'Bench Customer',
        'email', 'bench@example.com'),
      'fulfilment', 'delivery', 'day', current_date::text)
      || ${
    paid
      ? tx`jsonb_build_object('paymentId', 'pi_bench_' || seed.g,
             'paidAt', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`
      : tx`'{}'::jsonb`
  })`;
}

/** Makes the tables' statistics and visibility maps current, then checkpoints. */
export async function settle(sql: Sql, tables: string[]) {
  for (const t of tables) await sql`vacuum (analyze) ${sql(t)}`;
  await sql`checkpoint`;
}

/** `n` pending OrderPlaced rows in orders.outbox, over `sandboxCount` sandboxes. */
export async function outboxBacklog(sql: Sql, n: number, sandboxCount = 100) {
  await sql.begin(async (tx) => {
    await sandboxes(tx, sandboxCount);
    await seedOrders(tx, n, sandboxCount);
    await tx`
      insert into orders.outbox (tenant_id, message_id, type, envelope)
      select seed.tenant_id, seed.message_id, 'OrderPlaced',
             ${envelopeSql(tx, "OrderPlaced", 1, false)}
        from seed order by seed.g`;
  });
  await settle(sql, ["orders.outbox"]);
}

/**
 * `n` paid orders as the receivers expect them: a kitchen card (new,
 * version 1) for each, and OrderPaid (version 2) published to the queue with
 * one pending delivery per receiver (six).
 */
export async function paidDeliveries(sql: Sql, n: number, sandboxCount = 100) {
  await sql.begin(async (tx) => {
    await sandboxes(tx, sandboxCount);
    await seedOrders(tx, n, sandboxCount);
    await tx`
      insert into kitchen.cards (order_id, tenant_id, state, version, items, day, placed_message_id)
      select order_id, tenant_id, 'new', 1, '[]', current_date, gen_random_uuid()
        from seed`;
    await tx`
      insert into queue.messages (message_id, tenant_id, source, type, aggregate_id, envelope)
      select seed.message_id, seed.tenant_id, 'orders', 'OrderPaid', seed.order_id::text,
             ${envelopeSql(tx, "OrderPaid", 2, true)}
        from seed order by seed.g`;
    await tx`
      insert into queue.deliveries (tenant_id, message_id, subscriber, type, aggregate_id)
      select seed.tenant_id, seed.message_id, r.subscriber, 'OrderPaid', seed.order_id::text
        from seed cross join unnest(${[...RECEIVERS]}::text[]) as r(subscriber)
       order by seed.g, r.subscriber`;
  });
  await settle(sql, ["kitchen.cards", "queue.messages", "queue.deliveries"]);
}

export interface ConsoleSeed {
  /** The sandbox the console reads. */
  sandboxId: string;
}

/** How big a console's world is. */
export interface ConsoleWorld {
  history: number;
  pending: number;
  dead: number;
  sandboxCount: number;
  onStep?: (what: string) => void;
}

/**
 * A console's world: `history` delivered messages (queue message, one done
 * delivery with its attempt, and the receiver's inbox row) over
 * `sandboxCount` sandboxes; then, in the first sandbox,
 * `pending` outbox rows not yet published and `dead` dead letters.
 */
export async function consoleWorld(
  sql: Sql,
  o: ConsoleWorld,
): Promise<ConsoleSeed> {
  const step = o.onStep ?? (() => {});
  const sandboxId = await sql.begin(async (tx) => {
    const ids = await sandboxes(tx, o.sandboxCount);
    await seedOrders(tx, o.history, o.sandboxCount);
    await queueHistory(tx, o);
    await inboxHistory(tx, RECEIVERS, step);
    return ids[0];
  });
  await pendingAndDead(sql, sandboxId, o);
  step("vacuum analyze");
  await settle(sql, [
    ...QUEUE_TABLES,
    ...RECEIVERS.map((r) => `${r}.inbox`),
  ]);
  return { sandboxId };
}

/**
 * The same world with a database per service (SERVICE_DATABASES=split):
 * the sandboxes in the console's database, the orders, the queue and the
 * outbox in the orders database (whose queue carries OrderPlaced), each
 * receiver's inbox rows in its own. Each database makes the same `seed`
 * from one salt, so that every inbox row names a message of the queue.
 */
export async function splitConsoleWorld(
  pools: ReadonlyMap<string, Sql>,
  o: ConsoleWorld,
): Promise<ConsoleSeed> {
  const step = o.onStep ?? (() => {});
  const same = { salt: crypto.randomUUID(), epochMs: Date.now() };
  const ids = await pools.get("console")!.begin((tx) =>
    sandboxes(tx, o.sandboxCount)
  );
  const orders = pools.get("orders")!;
  await orders.begin(async (tx) => {
    await knownSandboxes(tx, ids);
    await seedOrders(tx, o.history, o.sandboxCount, same);
    await queueHistory(tx, o);
  });
  for (const r of RECEIVERS) {
    await pools.get(r)!.begin(async (tx) => {
      await knownSandboxes(tx, ids);
      await seedOrders(tx, o.history, o.sandboxCount, same);
      await inboxHistory(tx, [r], step);
    });
  }
  await pendingAndDead(orders, ids[0], o);
  step("vacuum analyze");
  await settle(orders, QUEUE_TABLES);
  for (const r of RECEIVERS) await settle(pools.get(r)!, [`${r}.inbox`]);
  return { sandboxId: ids[0] };
}

/** What {@link queueHistory} and {@link pendingAndDead} write. */
const QUEUE_TABLES = [
  "orders.orders",
  "orders.outbox",
  "queue.messages",
  "queue.deliveries",
  "queue.attempts",
];

/** The history's orders, messages, done deliveries and attempts. */
async function queueHistory(tx: TxSql, o: ConsoleWorld) {
  const step = o.onStep ?? (() => {});
  step("history: orders");
  await seedOrderRows(tx);
  // History envelopes are compact (no order snapshot): nothing reads them.
  // Published, they live in the queue alone: the outbox holds what is owed.
  const small = tx`jsonb_build_object('messageId', seed.message_id,
    'type', 'OrderPlaced', 'aggregateId', seed.order_id, 'tenantId', seed.tenant_id)`;
  step("history: messages");
  await tx`
    insert into queue.messages (message_id, tenant_id, source, type, aggregate_id,
                                envelope, published_at)
    select message_id, tenant_id, 'orders', 'OrderPlaced', order_id::text, ${small},
           now() - (${o.history} - g) * interval '100 ms'
      from seed order by g`;
  // History as the running system leaves it: every done delivery has been
  // audited and counted as closed. Where the audit keeps positions
  // (queue.audit_positions), the history sorts before each subscriber's;
  // where it marked deliveries (queue.deliveries.audited), each is marked.
  const [has] = await tx<{ positions: boolean; marks: boolean }[]>`
    select to_regclass('queue.audit_positions') is not null as positions,
           exists (select from information_schema.columns
                    where table_schema = 'queue' and table_name = 'deliveries'
                      and column_name = 'audited') as marks`;
  step("history: deliveries");
  await tx`
    insert into queue.deliveries (tenant_id, message_id, subscriber, type, aggregate_id,
                                  state, attempts, last_status, done_at${
    has.positions ? tx`, done_xid` : tx``
  })
    select tenant_id, message_id, subscriber, 'OrderPlaced', order_id::text,
           'done', 1, 200, now()${has.positions ? tx`, '0'::xid8` : tx``}
      from seed order by g`;
  if (has.positions) {
    step("history: audit");
    await tx`
      insert into queue.audit_positions (subscriber, done_xid, id)
      select subscriber, '0', max(id) from queue.deliveries
       where state = 'done' group by 1
      on conflict (subscriber) do nothing`;
  } else if (has.marks) {
    step("history: audit");
    await tx`update queue.deliveries set audited = true where state = 'done'`;
  }
  if (has.positions || has.marks) {
    await tx`
      insert into queue.closure_counts (tenant_id, subscriber, closed)
      select tenant_id, subscriber, count(*) from seed group by 1, 2`;
  }
  step("history: attempts");
  await tx`
    insert into queue.attempts (tenant_id, delivery_id, attempt, started_at,
                                duration_ms, status, outcome)
    select tenant_id, id, 1, now(), 3, 200, 'done' from queue.deliveries
     order by id`;
}

/** The history's inbox rows of `receivers`. */
async function inboxHistory(
  tx: TxSql,
  receivers: readonly string[],
  step: (what: string) => void,
) {
  step("history: inboxes");
  for (const r of receivers) {
    await tx`
      insert into ${tx(`${r}.inbox`)} (message_id, tenant_id, type, status)
      select message_id, tenant_id, 'OrderPlaced', 200 from seed
       where subscriber = ${r}`;
  }
}

/** In the sandbox read: outbox rows still owed, and kitchen dead letters. */
async function pendingAndDead(sql: Sql, sandboxId: string, o: ConsoleWorld) {
  o.onStep?.("pending and dead letters");
  await sql.begin(async (tx) => {
    await knownSandboxes(tx, [sandboxId]);
    await seedOrders(tx, o.pending + o.dead, 1);
    await seedOrderRows(tx);
    await tx`
      insert into orders.outbox (tenant_id, message_id, type, envelope)
      select seed.tenant_id, seed.message_id, 'OrderPlaced',
             ${envelopeSql(tx, "OrderPlaced", 1, false)}
        from seed where g <= ${o.pending} order by g`;
    await tx`
      insert into queue.messages (message_id, tenant_id, source, type, aggregate_id,
                                  envelope, published_at)
      select seed.message_id, seed.tenant_id, 'orders', 'OrderPaid', seed.order_id::text,
             ${envelopeSql(tx, "OrderPaid", 2, true)},
             now() - (${o.pending + o.dead} - g) * interval '1 s'
        from seed where g > ${o.pending} order by g`;
    await tx`
      insert into queue.deliveries (tenant_id, message_id, subscriber, type, aggregate_id,
                                    state, attempts, last_status, last_error, dead_at)
      select tenant_id, message_id, 'kitchen', 'OrderPaid', order_id::text, 'dead', 4,
             503, 'Kitchen answered 503: Kitchen refuses deliveries',
             now() - (${o.pending + o.dead} - g) * interval '1 s'
        from seed where g > ${o.pending} order by g`;
  });
}
