/**
 * The platform's own work in split mode (services/databases.ts), where
 * each sender's database holds a queue and the console's database holds
 * the sandboxes: a bulk job over dead letters in two queues is one job to
 * the operator; the daily wipe empties every database of a sandbox and
 * closes it in each; retention prunes each queue in its own database and
 * asks the queues before it removes an inbox row. The labs run there too.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { asService } from "../lib/db/service.ts";
import { TenantClosed } from "../lib/db/closed.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { uuidv7 } from "../lib/outbox/envelope.ts";
import { SPLIT_DATABASES } from "../services/databases.ts";
import { pruneOld } from "../services/retention.ts";
import { counted } from "../lib/ledger/audit.ts";
import { RECEIVERS } from "../services/routing.ts";
import { wipeDue } from "../services/wipe.ts";
import {
  countOf,
  deadLettersSettle,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  type TestBakery,
  testConfig,
  withTestBakery,
} from "./_app.ts";
import { jobSettles } from "./_console_ops.ts";

const SPLIT = { SERVICE_DATABASES: "split" };
const DAY_MS = 86_400_000;

/**
 * Copies dead letter `id` of `from`'s queue into `to`'s queue `n` times,
 * each under a message id of its own; returns the new delivery ids, which
 * come from `to`'s slot.
 */
async function copyInto(from: Sql, to: Sql, id: number, n: number) {
  const [d] = await from<
    {
      tenant_id: string;
      subscriber: string;
      type: string;
      aggregate_id: string;
      last_error: string;
      envelope: Record<string, unknown>;
      source: string;
    }[]
  >`
    select d.tenant_id, d.subscriber, d.type, d.aggregate_id, d.last_error,
           m.envelope, m.source
      from queue.deliveries d join queue.messages m using (message_id)
     where d.id = ${id}`;
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const messageId = uuidv7();
    await to`
      insert into queue.messages (message_id, tenant_id, source, type,
                                  aggregate_id, envelope, published_at)
      values (${messageId}, ${d.tenant_id}, ${d.source}, ${d.type},
              ${d.aggregate_id},
              ${to.json({ ...d.envelope, messageId } as never)}, now())`;
    const [row] = await to<{ id: string }[]>`
      insert into queue.deliveries (tenant_id, message_id, subscriber, type,
                                    aggregate_id, state, attempts,
                                    last_status, last_error, dead_at)
      values (${d.tenant_id}, ${messageId}, ${d.subscriber}, ${d.type},
              ${d.aggregate_id}, 'dead', 4, 503, ${d.last_error}, now())
      returning id`;
    ids.push(Number(row.id));
  }
  return ids;
}

Deno.test("split mode: a bulk refusal across two queues is one job, worked by each queue's loop", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Bulk operator");
    const fault = await client.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
    });
    assert.equal(fault.status, 200);
    await placeOrderVia(client);
    const [dead] = await deadLettersSettle(client, 1, "subscriber=kitchen");
    const orders = t.at("orders");
    const billing = t.at("billing");
    await copyInto(orders, orders, dead.id, 69);
    await copyInto(orders, billing, dead.id, 50);

    const started = await client.json<{ jobId: string; count: number }>(
      "POST",
      "/api/console/dead-letters/refuse",
      { subscriber: "kitchen", reason: "test copies", ratePerSecond: 400 },
    );
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.count, 120);
    const job = await jobSettles(client, started.body.jobId, "done");
    assert.deepEqual([job.done, job.total, job.changed], [120, 120, 120]);

    // Each queue refused its own, in its own database.
    const refused = (sql: Sql) =>
      countOf(sql<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries
         where state = 'refused'`);
    assert.deepEqual([await refused(orders), await refused(billing)], [70, 50]);
    // The log has each queue's part, under the one job id.
    const { body: log } = await client.json<{
      items: { action: string; count: number; jobId: string | null }[];
    }>("GET", "/api/console/actions");
    assert.deepEqual(
      log.items.filter((a) => a.action === "refuse")
        .map((a) => [a.count, a.jobId]).sort(),
      [[50, started.body.jobId], [70, started.body.jobId]],
    );
    // Cancelling a finished job changes nothing, in either part.
    const cancel = await client.json<{ state: string; total: number }>(
      "POST",
      `/api/console/jobs/${started.body.jobId}/cancel`,
    );
    assert.deepEqual([cancel.status, cancel.body.state, cancel.body.total], [
      200,
      "done",
      120,
    ]);
  }, SPLIT);
});

/** Every row of `tenantId` in every database but the kept tables. */
async function rowsLeft(t: TestBakery, tenantId: string) {
  const left: Record<string, number> = {};
  for (const { name } of SPLIT_DATABASES) {
    const sql = t.databases!.pools.get(name)!;
    const tables = await sql<{ t: string }[]>`
      select format('%I.%I', table_schema, table_name) as t
        from information_schema.columns
       where column_name = 'tenant_id'
         and table_schema not in ('pg_catalog', 'information_schema')
         and format('%I.%I', table_schema, table_name) not in
             ('platform.tenants', 'platform.sessions',
              'platform.closed_refusals')
         and (table_schema, table_name) in
             (select table_schema, table_name from information_schema.tables
               where table_type = 'BASE TABLE')`;
    for (const { t: table } of tables) {
      const n = await countOf(sql<{ n: number }[]>`
        select count(*)::int as n from ${sql(table)}
         where tenant_id = ${tenantId}`);
      if (n > 0) left[`${name}: ${table}`] = n;
    }
  }
  return left;
}

Deno.test("split mode: the daily wipe empties every database of a sandbox, and closes it in each", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Ada");
    const other = t.client();
    const kept = await signIn(other, "Bo");
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    await client.json("POST", "/api/labs/ledger/lost-ack");
    const before = await rowsLeft(t, sandboxId);
    for (
      const db of ["orders", "billing", "kitchen", "lab_sender", "lab_receiver"]
    ) {
      assert.ok(
        Object.keys(before).some((k) => k.startsWith(`${db}: `)),
        `rows in ${db}: ${JSON.stringify(before)}`,
      );
    }
    // Bo's sandbox is made after the boundary: it keeps everything.
    await t
      .sql`update platform.tenants set created_at = now() + interval '2 days'
                 where id = ${kept.sandboxId}`;

    const tomorrow = new Date(Date.now() + DAY_MS);
    tomorrow.setUTCHours(11);
    const { logger } = memoryLogger("error");
    const wiped = await wipeDue(t.sql, logger, { at: tomorrow });
    assert.deepEqual([wiped.ran, wiped.sandboxes], [true, 1]);
    assert.deepEqual(await rowsLeft(t, sandboxId), {});
    assert.ok(
      wiped.rowsDeleted >= Object.values(before).reduce((a, b) => a + b),
    );
    // Closed in each database: a service's transaction there is refused.
    for (const service of ["orders", "kitchen", "lab_receiver"]) {
      await assert.rejects(
        asService(
          t.sql,
          service,
          { tenantId: sandboxId },
          ({ sql }) => sql`select 1`,
        ),
        TenantClosed,
        service,
      );
      const [copy] = await t.at(service)<{ wiped: boolean }[]>`
        select wiped_at is not null as wiped from platform.tenants
         where id = ${sandboxId}`;
      assert.equal(copy.wiped, true, service);
    }
    // The other sandbox's work goes on.
    const next = await placeOrderVia(other);
    await payVia(other, next.orderId);
    await orderSettles(other, next.orderId, "paid");
  }, SPLIT);
});

Deno.test("split mode: retention prunes each queue in its database, and keeps the inbox rows a queue still owes", async () => {
  const config = testConfig(SPLIT);
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    const open = async () => {
      let n = 0;
      for (const sender of ["orders", "billing"]) {
        n += await countOf(t.at(sender)<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries
           where state <> 'done'`);
      }
      return n;
    };
    await eventually("every delivery done", async () => await open() === 0);
    await eventually("the audit to count every done delivery", async () => {
      let n = 0;
      for (const sender of ["orders", "billing"]) {
        const sql = t.at(sender);
        n += await countOf(sql<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries d
           where d.state = 'done' and not ${counted(sql)}`);
      }
      return n === 0;
    });
    // One of customers' deliveries dead (as a redrive could still send it
    // again); then every row 40 days older.
    const [dead] = await t.at("orders")<{ message_id: string }[]>`
      update queue.deliveries
         set state = 'dead', dead_at = now(), done_at = null
       where id = (select min(id) from queue.deliveries
                    where subscriber = 'customers')
      returning message_id`;
    const back = t.sql`interval '40 days'`;
    for (const sender of ["orders", "billing"]) {
      const sql = t.at(sender);
      await sql`update queue.messages set published_at = published_at - ${back}`;
      await sql`
        update queue.deliveries
           set done_at = done_at - ${back},
               dead_at = dead_at - ${back},
               last_started_at = last_started_at - ${back}`;
    }
    for (const subscriber of [...RECEIVERS, "orders"]) {
      const sql = t.at(subscriber);
      await sql`update ${sql(`${subscriber}.inbox`)}
                   set received_at = received_at - ${back}`;
    }

    const pruned = await pruneOld(t.sql, config);
    // Ten deliveries: nine done go, the dead one stays with its message.
    assert.deepEqual(
      [pruned.deliveries, pruned.messages],
      [9, 2],
      JSON.stringify(pruned),
    );
    assert.equal(pruned.inboxes.customers, 1);
    assert.equal(pruned.inboxes.kitchen, 2);
    assert.equal(pruned.inboxes.orders, 1);
    const [kept] = await t.at("customers")<{ n: number }[]>`
      select count(*)::int as n from customers.inbox
       where message_id = ${dead.message_id}`;
    assert.equal(kept.n, 1);
    const again = await pruneOld(t.sql, config);
    assert.equal(again.deliveries + again.messages, 0);
  }, SPLIT);
});

Deno.test("split mode: both labs run, the queue lab's queue beside the printer", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    const ledger = await client.json<
      { receiver: { inbox: number; jobs: number } }
    >("POST", "/api/labs/ledger/lost-ack-redelivered");
    assert.equal(ledger.status, 200);
    assert.deepEqual(ledger.body.receiver, {
      inbox: 1,
      jobs: 1,
      refusals: 0,
    });
    const queue = await client.json<{ tickets: number; duplicates: number }>(
      "POST",
      "/api/labs/queue",
      {
        orders: 4,
        workers: 2,
        crash: "after-print-before-ack",
        receiverRemembers: true,
      },
    );
    assert.equal(queue.status, 200, JSON.stringify(queue.body));
    assert.deepEqual([queue.body.tickets, queue.body.duplicates], [4, 0]);
    const last = await client.json<{ run: { tickets: number } | null }>(
      "GET",
      "/api/labs/queue",
    );
    assert.equal(last.body.run?.tickets, 4);
    // The bakery's queues never held the lab's work.
    for (const sender of ["orders", "billing"]) {
      assert.equal(
        await countOf(t.at(sender)<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries
           where subscriber = 'lab_printer'`),
        0,
      );
    }
  }, SPLIT);
});
