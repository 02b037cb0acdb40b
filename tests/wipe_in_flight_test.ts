/**
 * The daily wipe while a sandbox still works: payments in flight, a
 * receiver's transaction open across the wipe's start, slow deliveries that
 * come back after it, a Stripe event and a delivery that arrive later. On
 * both transports nothing of the sandbox is left in any table, the broker
 * holds nothing of it, and nothing of it is applied afterwards, not even
 * from lanes made again; what came late is refused with a row that says
 * why.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Sql } from "../lib/db/connect.ts";
import { TenantClosed } from "../lib/db/closed.ts";
import { setFault } from "../lib/faults/mod.ts";
import { receiveOnce } from "../lib/inbox/mod.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import type { Envelope } from "../lib/outbox/envelope.ts";
import { Lanes, StreamNames } from "../lib/carriers/jetstream/mod.ts";
import {
  bakeryDispatcher,
  INTERNAL_ORIGIN,
} from "../services/receivers/endpoints.ts";
import { applyToOrders } from "../services/orders/payments.ts";
import { placeOrder } from "../services/orders/place.ts";
import { SENDERS, SUBSCRIBERS } from "../services/routing.ts";
import { wipeDue } from "../services/wipe.ts";
import {
  countOf,
  eventually,
  orderSettles,
  paymentIntentEvent,
  payVia,
  placeOrderVia,
  postWebhook,
  signIn,
  TEST_WEBHOOK_SECRET,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";

/** The rows the wipe keeps of a sandbox (services/wipe.ts). */
const KEPT = [
  "platform.tenants",
  "platform.sessions",
  "platform.closed_refusals",
];

/** Every database of the bakery `t` once: one, or split, each service's. */
function databasesOf(t: TestBakery): Sql[] {
  return t.databases ? [...t.databases.pools.values()] : [t.sql];
}

/**
 * Rows of the sandbox in every table that has a tenant_id, but the kept,
 * added up over every database.
 */
async function rowsOf(t: TestBakery, sandboxId: string) {
  const left: Record<string, number> = {};
  for (const sql of databasesOf(t)) {
    for (const [table, n] of Object.entries(await rowsIn(sql, sandboxId))) {
      left[table] = (left[table] ?? 0) + n;
    }
  }
  return left;
}

/** {@link rowsOf} in one database. */
async function rowsIn(sql: Sql, sandboxId: string) {
  const tables = await sql<{ t: string }[]>`
    select format('%I.%I', c.table_schema, c.table_name) as t
      from information_schema.columns c
      join information_schema.tables t using (table_schema, table_name)
     where c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE'
       and c.table_schema not in ('pg_catalog', 'information_schema')
     order by 1`;
  const left: Record<string, number> = {};
  for (const { t } of tables) {
    if (KEPT.includes(t)) continue;
    const n = await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(t)} where tenant_id = ${sandboxId}`);
    if (n > 0) left[t] = n;
  }
  return left;
}

/**
 * The refusals recorded for the sandbox, as "who/what" per row, in every
 * database (a queue's statements record theirs beside the queue).
 */
async function refusalsOf(t: TestBakery, sandboxId: string) {
  const refusals: string[] = [];
  for (const sql of databasesOf(t)) {
    const rows = await sql<{ r: string }[]>`
      select refused_by || '/' || what as r from platform.closed_refusals
       where tenant_id = ${sandboxId} order by id`;
    refusals.push(...rows.map((r) => r.r));
  }
  return refusals;
}

/** Runs the race on the bakery `t`, over JetStream if `broker`. */
async function wipeRacingPayments(t: TestBakery, broker = false) {
  const { sql } = t;
  const { logger } = memoryLogger("error");
  const ada = t.client();
  const { sandboxId } = await signIn(ada, "Ada");
  const bo = t.client();
  const { sandboxId: keptId } = await signIn(bo, "Bo");
  // Ada's sandbox is older than the day's boundary, by the database's clock.
  await sql`update platform.tenants
               set created_at = now() - interval '2 days'
             where id = ${sandboxId}`;

  // One order settled: rows in every receiver, the queue, billing.
  const first = await placeOrderVia(ada);
  await payVia(ada, first.orderId);
  await orderSettles(ada, first.orderId, "paid");
  // Two more paid while orders is slow: their PaymentSucceeded deliveries
  // are in flight, the receiver asleep before its transaction, when the
  // wipe begins; they come back after it.
  await setFault(sql, sandboxId, "ordersSlow", true);
  const late = [await placeOrderVia(ada), await placeOrderVia(ada)];
  for (const o of late) await payVia(ada, o.orderId);
  await eventually(
    "both payments in flight to orders",
    async () =>
      await countOf(t.at("billing")<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries
       where tenant_id = ${sandboxId} and type = 'PaymentSucceeded'
         and state = 'in_flight'`) === 2,
  );
  const [{ envelope }] = await t.at("billing")<{ envelope: Envelope }[]>`
    select envelope from queue.messages
     where tenant_id = ${sandboxId} and type = 'PaymentSucceeded'
       and aggregate_id = ${late[0].orderId}`;

  // A receiver's transaction open across the wipe's start: it has begun
  // (its gate passed) when the wipe begins, and only then does the orders
  // receiver apply that PaymentSucceeded (OrderPaid, its outbox row, the
  // inbox row) and commit.
  const began = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const held = receiveOnce(sql, "orders", envelope, async (tx, e) => {
    await tx.sql`select 1`;
    began.resolve();
    await release.promise;
    return await applyToOrders(tx, e);
  }, { replayHorizonDays: 7 });
  held.catch(() => began.resolve());
  let settled = false;
  let wiping: Promise<{ ran: boolean; sandboxes: number }>;
  try {
    await began.promise;
    wiping = wipeDue(sql, logger, { transport: t.bakery.messaging })
      .finally(() => settled = true);
    wiping.catch(() => {});
    // to_jsonb reads wiping_at whether the column exists or not: a wipe
    // that does not close the sandbox first is simply waited for.
    await eventually(
      "the wipe to close the sandbox",
      async () =>
        settled || (await sql<{ closed: boolean }[]>`
        select to_jsonb(s) ->> 'wiping_at' is not null as closed
          from platform.tenants s where id = ${sandboxId}`)[0].closed,
    );
  } finally {
    release.resolve();
  }
  const heldAnswer = await held;
  const wiped = await wiping;
  assert.equal(wiped.ran, true);
  assert.ok(wiped.sandboxes >= 1);

  // The slow deliveries come back after the wipe: refused, with a row each.
  await eventually(
    "the slow deliveries to be refused",
    async () =>
      (await refusalsOf(t, sandboxId)).filter((r) => r === "orders/delivery")
        .length === 2,
    15_000,
  );
  // Later still: the same delivery again, a Stripe event, a command.
  const dispatcher = bakeryDispatcher({
    sql,
    log: logger,
    config: t.bakery.deps.config,
  });
  const again = await dispatcher.send(
    new Request(`${INTERNAL_ORIGIN}/receivers/orders`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(envelope),
    }),
  );
  assert.equal(again.status, 422);
  assert.match((await again.json()).reason, /is closed/);
  const payload = JSON.stringify(paymentIntentEvent({
    sandboxId,
    orderId: late[1].orderId,
    paymentId: "pi_after_the_wipe",
    amountCents: late[1].totalCents,
  }));
  const hook = await postWebhook(
    t.url,
    payload,
    await Stripe.webhooks.generateTestHeaderStringAsync({
      payload,
      secret: TEST_WEBHOOK_SECRET,
    }),
  );
  assert.equal(hook.status, 200, "Stripe stops sending it");
  assert.match(String(hook.body.outcome), /^refused: .* is closed/);
  await assert.rejects(
    placeOrder(sql, sandboxId, {
      items: [{ sku: "cardamom-bun", qty: 1 }],
      customer: { name: "Ada", email: "ada@example.com" },
      fulfilment: "pickup",
      idempotencyKey: crypto.randomUUID(),
    }),
    TenantClosed,
  );
  assert.deepEqual(await rowsOf(t, sandboxId), {});
  // It had begun before the wipe: the wipe waited for it, then deleted it.
  assert.equal(heldAnswer.status, 200, "the held receiver applied in full");
  // Orders: the two slow deliveries and the late one; billing: the event.
  // Deliveries to other receivers that were on their way when the wipe
  // began, or that the broker gave after it, are refused too, as many as
  // the race made.
  const refusals = await refusalsOf(t, sandboxId);
  const count = (r: string) => refusals.filter((x) => x === r).length;
  assert.equal(count("orders/delivery"), 3);
  assert.equal(count("billing/webhook"), 1);
  assert.deepEqual(
    refusals.filter((r) =>
      !/^[a-z]+\/delivery$/.test(r) && r !== "queue/message" &&
      r !== "billing/webhook"
    ),
    [],
  );
  const [mark] = await sql<{ wiping: boolean; wiped: boolean }[]>`
    select wiping_at is not null as wiping, wiped_at is not null as wiped
      from platform.tenants where id = ${sandboxId}`;
  assert.deepEqual(mark, { wiping: true, wiped: true });

  // The broker holds nothing of the sandbox; its lanes made again give
  // nothing, while another sandbox's paid order goes all the way.
  // Each stream: the one, or split, each sender's.
  let lanes: { nc: NatsConnection; check(): Promise<void> } | undefined;
  if (broker) {
    const nc = await connect({ servers: TEST_NATS_URL });
    const jsm = await jetstreamManager(nc);
    const streams = [...new Set(SENDERS.map((s) => t.streamOf(s)))];
    const keys = SUBSCRIBERS.map((subscriber) => ({
      subscriber,
      tenantId: sandboxId,
    }));
    for (const stream of streams) {
      const names = new StreamNames(stream);
      const info = await jsm.streams.info(stream, {
        subjects_filter: names.tenantFilter(sandboxId),
      });
      assert.deepEqual(info.state.subjects ?? {}, {}, `${stream} keeps none`);
      await new Lanes(nc, jsm, names, { ackWaitMs: 1000, idleMs: 600_000 })
        .ensure(keys, true);
    }
    lanes = {
      nc,
      check: async () => {
        for (const stream of streams) {
          const names = new StreamNames(stream);
          for (const { subscriber } of keys) {
            const ci = await jsm.consumers.info(
              stream,
              names.consumer(subscriber, sandboxId),
            );
            const what = `${subscriber} on ${stream}`;
            assert.equal(ci.num_pending + ci.num_ack_pending, 0, what);
            // Deliveries made: none (its stream sequence starts past the
            // purge).
            assert.equal(ci.delivered.consumer_seq, 0, `${what} replayed`);
          }
        }
      },
    };
  }
  try {
    t.bakery.messaging?.wakeConsumers();
    const kept = await placeOrderVia(bo);
    await payVia(bo, kept.orderId);
    await orderSettles(bo, kept.orderId, "paid");
    await lanes?.check();
  } finally {
    await lanes?.nc.close();
  }
  assert.deepEqual(await rowsOf(t, sandboxId), {});
  assert.ok(
    Object.keys(await rowsOf(t, keptId)).length > 5,
    "the other sandbox keeps its rows",
  );
}

Deno.test("wipe in flight: over the PostgreSQL queue, nothing of the sandbox is left or applied after", async () => {
  // Deliveries time out after 3 s; a slow receiver sleeps 4 s first.
  await withTestBakery((t) => wipeRacingPayments(t), {
    QUEUE: "postgres",
    DELIVERY_TIMEOUT_MS: "3000",
  });
});

natsTest(
  "wipe in flight: over JetStream, the stream keeps nothing of the sandbox and its lanes made again replay nothing",
  async () => {
    await withTestBakery((t) => wipeRacingPayments(t, true), {
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: testStream(),
      DELIVERY_TIMEOUT_MS: "3000",
    });
  },
);
