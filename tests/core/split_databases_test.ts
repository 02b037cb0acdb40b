/**
 * The core over a database per service, in the two layouts a split
 * deployment over the PostgreSQL queue can take. The receiver always has a
 * database of its own (tenancy and its inbox), and applies there.
 *
 * - The queue in a database of its own: the relay works in the sender's
 *   database and publishes into the queue's, then marks (no move: no
 *   transaction may span two databases). The consumers claim in the
 *   queue's.
 * - The queue in the sender's database: the relay's move stays one
 *   transaction, and the consumers claim there.
 *
 * Each database holds its parts alone, and the closure audit reads the
 * receiver's inbox in its own database.
 */
import assert from "node:assert/strict";
import { connect, type Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { pgFaults } from "../../lib/faults/mod.ts";
import { inboxBatchHandler, inboxHandler } from "../../lib/inbox/mod.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { append } from "../../lib/outbox/mod.ts";
import { auditOnce } from "../../lib/ledger/audit.ts";
import { Dispatcher } from "../../lib/delivery/mod.ts";
import { postgresCarrier } from "../../lib/carriers/mod.ts";
import { type MessagingPart, migrateMessaging } from "../../lib/schema.ts";
import { startMessaging } from "../../lib/workers/mod.ts";
import { emptyDatabase } from "./_db.ts";
import {
  createService,
  orderPlacedEnvelope,
  receiverApply,
  RECEIVERS,
  SENDER,
  waitFor,
} from "./_messaging.ts";

const RECEIVER = RECEIVERS[0];
const ORIGIN = "http://receiver.split";

/** The user tables of the database of `sql`, schema-qualified. */
async function tables(sql: Sql): Promise<string[]> {
  const rows = await sql<{ t: string }[]>`
    select schemaname || '.' || tablename as t from pg_tables
     where schemaname not in ('pg_catalog', 'information_schema', 'public')
     order by 1`;
  return rows.map((r) => r.t);
}

/** Runs `fn` with three empty databases, each migrated with `parts`. */
async function withDatabases(
  parts: MessagingPart[][],
  fn: (dbs: { url: string; sql: Sql }[]) => Promise<void>,
  made: { url: string; sql: Sql }[] = [],
): Promise<void> {
  if (made.length === parts.length) {
    try {
      return await fn(made);
    } finally {
      await Promise.all(made.map((db) => db.sql.end()));
    }
  }
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 4 });
    await migrateMessaging(sql, memoryLogger().logger, {
      parts: parts[made.length],
    });
    await withDatabases(parts, fn, [...made, { url, sql }]);
  });
}

/** Where the queue is: a database of its own, or the sender's. */
type Layout = "own" | "sender's";

for (const layout of ["own", "sender's"] as const) {
  Deno.test(
    `a database per service, the queue in ${
      layout === "own" ? "its own" : "the sender's"
    }: each message applied once, in the receiver's database`,
    async () => {
      await split(layout);
    },
  );
}

async function split(layout: Layout) {
  const parts: MessagingPart[][] = layout === "own"
    ? [["outbox"], ["queue"], ["inbox"]]
    : [["outbox", "queue"], ["inbox"]];
  await withDatabases(parts, async (dbs) => {
    const [sender, receiver] = [dbs[0], dbs.at(-1)!];
    const queue = layout === "own" ? dbs[1] : sender;
    await createService(sender.sql, SENDER);
    await sender.sql`select platform.create_outbox_with_indexes(${SENDER})`;
    await sender.sql`create table t_sender.orders (
        id text primary key, tenant_id uuid not null, note text)`;
    await sender.sql`select platform.enable_tenant_rls('t_sender.orders')`;
    await createService(receiver.sql, RECEIVER);
    await receiver.sql`select platform.create_inbox(${RECEIVER})`;
    await receiver.sql`create table ${receiver.sql(RECEIVER + ".jobs")} (
        order_id text primary key, tenant_id uuid not null,
        message_id uuid not null, applied_at timestamptz not null default now())`;
    await receiver.sql`select platform.enable_tenant_rls(${
      RECEIVER + ".jobs"
    })`;

    // Each database holds its own part, and nothing of the others.
    const senderTables = await tables(sender.sql);
    assert.ok(!senderTables.some((t) => /inbox/.test(t)));
    assert.equal(
      senderTables.some((t) => /^queue\./.test(t)),
      layout === "sender's",
    );
    assert.ok(!(await tables(queue.sql)).some((t) => /inbox/.test(t)));
    assert.ok(
      !(await tables(receiver.sql)).some((t) => /^queue\.|outbox/.test(t)),
    );

    const { logger } = memoryLogger("error");
    const routing = { OrderPlaced: [RECEIVER] };
    const receiverOptions = {
      sql: receiver.sql,
      service: RECEIVER,
      label: RECEIVER,
      apply: receiverApply(RECEIVER),
      replayHorizonDays: 30,
      log: logger,
    };
    const dispatcher = () =>
      new Dispatcher().register(
        ORIGIN,
        async (request) =>
          new URL(request.url).pathname === "/batch"
            ? await inboxBatchHandler(receiverOptions)(request)
            : await inboxHandler(receiverOptions)(request),
      );
    const common = {
      log: logger,
      subscribers: {
        [RECEIVER]: {
          url: `${ORIGIN}/one`,
          batchUrl: `${ORIGIN}/batch`,
          label: RECEIVER,
        },
      },
      pollMs: 200,
      relayRetryMs: 100,
      retryDelaysMs: [50, 100, 150],
      timeoutMs: 2000,
    };
    // In its own database, the queue's transport has no move: the relay
    // works in the sender's database and publishes into the queue's.
    const published = { ...postgresCarrier({ sql: queue.sql, routing }) };
    if (layout === "own") delete published.shortcut;
    const relay = await startMessaging({
      ...common,
      url: sender.url,
      sql: sender.sql,
      faults: pgFaults(sender.sql),
      senders: [SENDER],
      transport: published,
      dispatcher: dispatcher(),
      roles: { relay: true, consume: false },
    });
    const consumers = await startMessaging({
      ...common,
      url: queue.url,
      sql: queue.sql,
      faults: pgFaults(queue.sql),
      senders: [],
      transport: postgresCarrier({ sql: queue.sql, routing }),
      dispatcher: dispatcher(),
      roles: { relay: false, consume: true },
    });
    try {
      const tenant = crypto.randomUUID();
      const envelopes = [];
      for (const orderId of ["o-1", "o-2", "o-3"]) {
        const envelope = orderPlacedEnvelope(tenant, orderId);
        await asService(
          sender.sql,
          SENDER,
          { tenantId: tenant },
          async (tx) => {
            await tx.sql`insert into t_sender.orders (id, tenant_id)
                           values (${orderId}, ${tenant})`;
            await append(tx, [envelope]);
          },
        );
        envelopes.push(envelope);
      }
      relay.wake(SENDER);
      await waitFor("three jobs in the receiver's database", async () => {
        const [{ n }] = await receiver.sql<{ n: number }[]>`
            select count(*)::int as n from t_recv_a.jobs`;
        return n === 3;
      });
      await waitFor("three done deliveries in the queue's", async () => {
        const [{ n }] = await queue.sql<{ n: number }[]>`
            select count(*)::int as n from queue.deliveries
             where state = 'done'`;
        return n === 3;
      });
      const [{ owed }] = await sender.sql<{ owed: number }[]>`
          select count(*)::int as owed from t_sender.outbox`;
      assert.equal(owed, 0);
      const inbox = await receiver.sql<{ message_id: string }[]>`
          select message_id from t_recv_a.inbox order by message_id`;
      assert.deepEqual(
        inbox.map((r) => r.message_id),
        envelopes.map((e) => e.messageId).sort(),
      );
      await auditApart(queue.sql, receiver.sql, envelopes[0].messageId);
    } finally {
      await consumers.stop();
      await relay.stop();
    }
  });
}

/**
 * The closure audit, its inbox in another database than the queue's: an
 * inbox row removed behind the consumers' back is found missing, the rest
 * closed.
 */
async function auditApart(queue: Sql, receiver: Sql, lost: string) {
  await receiver`grant usage on schema ${receiver(RECEIVER)} to console`;
  await receiver`grant select on ${receiver(RECEIVER + ".inbox")} to console`;
  await receiver`delete from ${receiver(RECEIVER + ".inbox")}
                  where message_id = ${lost}`;
  const audit = {
    sql: queue,
    reader: "console",
    inboxOf: (s: string) => `${s}.inbox`,
    subscribers: [RECEIVER],
    inboxDatabase: () => receiver,
  };
  // A transaction still running anywhere in the cluster (another test's)
  // holds the audit back until it ends: looked at again until it counts.
  const counts = async () => [
    ...await queue`select closed::int, mismatch::int
                    from queue.closure_counts`,
  ];
  // It may count them over several looks, as each finish's transaction is
  // passed by every older one.
  await waitFor("the audit to count the three deliveries", async () => {
    await auditOnce(audit);
    return (await counts()).reduce((n, c) => n + c.closed + c.mismatch, 0) ===
      3;
  });
  assert.deepEqual(await counts(), [{ closed: 2, mismatch: 1 }]);
  assert.deepEqual(
    (await queue`select message_id from queue.mismatches`).map((r) =>
      r.message_id
    ),
    [lost],
  );
  // Audited once: a second look finds nothing left to count.
  assert.deepEqual(await auditOnce(audit), { more: false });
}
