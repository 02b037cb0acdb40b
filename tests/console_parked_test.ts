/**
 * Outbox rows parked by the relay's loop guard have a way out: the console
 * lists them apart (`GET /api/console/outbox`, `parkedRows` and `parked`
 * per group), and an operator releases one, a group or all of them
 * (`POST /api/console/outbox/release`). Released rows are published and
 * applied by the receivers; rows still parked stay as they were; another
 * sandbox neither sees nor releases them; every release is in the operator
 * log. On either transport (TEST_QUEUE=jetstream).
 *
 * Parking goes through the relay's own path: the sandbox's automatic
 * re-arms for the day are used up (as lib/carriers/conformance/guard.ts does) and
 * the queue refuses sends, so the first failed publish parks each row.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { poolOf } from "../lib/db/service.ts";
import { GUARD_LIMIT } from "../lib/outbox/mod.ts";
import { RELAY_FAULTS } from "../lib/faults/mod.ts";
import { SENDERS } from "../services/routing.ts";
import {
  type Client,
  countOf,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue, inEveryQueue } from "./_console_ops.ts";

const RELEASE = "/api/console/outbox/release";

/** The parts of `GET /api/console/outbox` this test reads. */
interface OutboxJson {
  pending: number;
  ready: number;
  parked: number;
  byService: { service: string; eventType: string; parked: number }[];
  oldest: { messageId: string; nextAttemptAt: string | null }[];
  parkedRows: {
    messageId: string;
    service: string;
    eventType: string;
    orderId: string;
    attempts: number;
    lastError: string | null;
  }[];
}

interface ParkedRow {
  service: string;
  type: string;
  message_id: string;
  attempts: number;
}

/**
 * The sandbox's parked outbox rows, every sender, oldest first per sender;
 * `bakery` is the bakery's pool, which leads to each sender's database.
 */
async function parkedRows(
  bakery: Sql,
  sandboxId: string,
): Promise<ParkedRow[]> {
  const rows: ParkedRow[] = [];
  for (const service of SENDERS) {
    const sql = poolOf(bakery, service);
    rows.push(
      ...await sql<ParkedRow[]>`
        select ${service}::text as service, type, message_id, attempts
          from ${sql(`${service}.outbox`)}
         where tenant_id = ${sandboxId} and state = 'pending'
           and next_attempt_at = 'infinity'
         order by id`,
    );
  }
  return rows;
}

/** The sandbox's unpublished outbox rows, parked or not, every sender. */
async function owed(bakery: Sql, sandboxId: string): Promise<number> {
  let n = 0;
  for (const service of SENDERS) {
    const sql = poolOf(bakery, service);
    n += await countOf(sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(`${service}.outbox`)}
       where tenant_id = ${sandboxId}`);
  }
  return n;
}

/** Waits until exactly `n` rows are owed and all of them are parked. */
async function parkedSettle(sql: Sql, sandboxId: string, n: number) {
  await eventually(
    `${n} parked rows and nothing else owed`,
    async () =>
      await owed(sql, sandboxId) === n &&
      (await parkedRows(sql, sandboxId)).length === n,
  );
  return await parkedRows(sql, sandboxId);
}

/** Rows of `table` whose column `column` is `value`, in its service's database. */
async function rowsWhere(
  bakery: Sql,
  table: string,
  column: string,
  value: string,
): Promise<number> {
  const sql = poolOf(bakery, table.slice(0, table.indexOf(".")));
  return await countOf(sql<{ n: number }[]>`
    select count(*)::int as n from ${sql(table)}
     where ${sql(column)} = ${value}::uuid`);
}

async function outboxOf(client: Client): Promise<OutboxJson> {
  const { status, body } = await client.json<OutboxJson>(
    "GET",
    "/api/console/outbox",
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

/** Releases through the API; the answer must be 200 `{ count }`. */
async function release(client: Client, body?: unknown): Promise<number> {
  const { status, body: answer } = await client.json<{ count: number }>(
    "POST",
    RELEASE,
    body,
  );
  assert.equal(status, 200, JSON.stringify(answer));
  assert.deepEqual(Object.keys(answer), ["count"]);
  return answer.count;
}

async function setFault(client: Client, on: boolean) {
  const { status } = await client.json("PUT", "/api/console/faults", {
    [RELAY_FAULTS.queueRefusesSends]: on,
  });
  assert.equal(status, 200);
}

/** The release lines of the client's operator log, oldest first. */
async function releasesLogged(client: Client) {
  const { status, body } = await client.json<
    {
      items: {
        action: string;
        actor: string;
        target: Record<string, unknown>;
        count: number;
      }[];
    }
  >("GET", "/api/console/actions");
  assert.equal(status, 200);
  return body.items.filter((a) => a.action === "release").reverse()
    .map(({ actor, target, count }) => ({ actor, target, count }));
}

Deno.test("parked: bad bodies are a 400 naming the field, no CSRF a 403, no session a 401; none of them is logged", async () => {
  await withTestBakery(async (t) => {
    const unsigned = await t.client().json("POST", RELEASE, {});
    assert.equal(unsigned.status, 401);

    const client = t.client();
    await signIn(client, "Release operator");
    const bad: [unknown, string][] = [
      [{ messageId: "O42" }, "messageId"],
      [{ messageId: 42 }, "messageId"],
      [{ messageId: null }, "messageId"],
      [{ service: "kitchen" }, "service"],
      [{ service: "" }, "service"],
      [{ eventType: "OrderBaked" }, "eventType"],
      [{ eventType: ["OrderPaid"] }, "eventType"],
      [{ service: "orders", everything: true }, "everything"],
    ];
    for (const [input, field] of bad) {
      const answer = await client.json<
        { error: string; issues: { path: string }[] }
      >("POST", RELEASE, input);
      assert.equal(answer.status, 400, JSON.stringify(input));
      assert.ok(
        answer.body.issues.some((i) => i.path === field),
        JSON.stringify(answer.body),
      );
    }
    for (const input of [[], "all", null, true, 7]) {
      const answer = await client.json("POST", RELEASE, input);
      assert.equal(answer.status, 400, JSON.stringify(input));
    }
    const malformed = await client.fetch(RELEASE, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    assert.equal(malformed.status, 400);
    await malformed.body?.cancel();
    const forged = await client.withOrigin("https://elsewhere.example").json(
      "POST",
      RELEASE,
      {},
    );
    assert.equal(forged.status, 403);
    const noOrigin = await client.withOrigin(null).json("POST", RELEASE, {});
    assert.equal(noOrigin.status, 403);
    assert.deepEqual(await releasesLogged(client), []);
    assert.equal(
      await countInEveryQueue(t.sql, (sql) =>
        sql<{ n: number }[]>`
        select count(*)::int as n from console.operator_actions`),
      0,
    );
  });
});

Deno.test("parked: rows the loop guard parked are listed apart and stay undelivered; released by message, group and all they are delivered and applied; another sandbox's release touches none", async () => {
  await withTestBakery(async (t) => {
    const { sql } = t;
    const ada = t.client();
    const { sandboxId } = await signIn(ada, "Ada");
    const bo = t.client();
    const { sandboxId: boSandbox } = await signIn(bo, "Bo");

    // Ada's sandbox has used up today's automatic re-arms in both senders,
    // and the queue refuses sends: each failed publish parks its row.
    for (const service of SENDERS) {
      const at = t.at(service);
      await at`
        insert into ${at(`${service}.relay_guard`)} (tenant_id, day, rearms)
        values (${sandboxId}, (now() at time zone 'utc')::date,
                ${GUARD_LIMIT})`;
    }
    await setFault(ada, true);
    const o1 = await placeOrderVia(ada);
    await parkedSettle(sql, sandboxId, 1);
    // O2's command flushes O1's parked row (the sender's own way out); the
    // publish fails again, and both are parked.
    const o2 = await placeOrderVia(ada);
    await parkedSettle(sql, sandboxId, 2);
    await payVia(ada, o2.orderId);
    const parked = await parkedSettle(sql, sandboxId, 3);
    const placed1 = parked.find((r) =>
      r.service === "orders" && r.attempts === 2
    )!;
    const placed2 = parked.find((r) =>
      r.service === "orders" && r.attempts === 1
    )!;
    const paid2 = parked.find((r) => r.service === "billing")!;
    assert.deepEqual(
      [placed1.type, placed2.type, paid2.type],
      ["OrderPlaced", "OrderPlaced", "PaymentSucceeded"],
    );
    const [{ last_error }] = await t.at("orders")`
      select last_error from orders.outbox
       where message_id = ${placed1.message_id}`;
    assert.match(last_error, /queueRefusesSends/);

    // The twin lists them apart from ready and backing-off rows.
    const listed = await outboxOf(ada);
    assert.equal(listed.pending, 3);
    assert.equal(listed.ready, 0);
    assert.equal(listed.parked, 3);
    assert.deepEqual(
      listed.byService.filter((g) => g.parked > 0)
        .map((g) => [g.service, g.eventType, g.parked]).sort(),
      [["billing", "PaymentSucceeded", 1], ["orders", "OrderPlaced", 2]],
    );
    assert.deepEqual(
      listed.parkedRows.map((r) => r.messageId).sort(),
      [placed1.message_id, placed2.message_id, paid2.message_id].sort(),
    );
    const row1 = listed.parkedRows.find((r) =>
      r.messageId === placed1.message_id
    )!;
    assert.deepEqual(
      [row1.service, row1.eventType, row1.orderId, row1.attempts],
      ["orders", "OrderPlaced", o1.orderId, 2],
    );
    assert.match(row1.lastError ?? "", /queueRefusesSends/);
    assert.ok(listed.oldest.every((r) => r.nextAttemptAt === null));
    // The page shows them in their own section, each with its Release, a
    // Release per group and a Release all.
    const page = await (await ada.fetch("/console/outbox")).text();
    assert.match(page, /data-testid="outbox-parked"/);
    for (const r of parked) {
      assert.match(page, new RegExp(`data-testid="release-${r.message_id}"`));
    }
    assert.match(page, /data-testid="release-group-orders-OrderPlaced"/);
    assert.match(page, /data-testid="release-group-billing-PaymentSucceeded"/);
    assert.match(page, /data-testid="release-all"/);

    // The fault is gone, yet parked rows stay: Bo's order goes all the way
    // through while Ada's rows wait, unpublished.
    await setFault(ada, false);
    const x1 = await placeOrderVia(bo);
    await orderSettles(bo, x1.orderId, "placed");
    assert.equal((await parkedRows(sql, sandboxId)).length, 3);
    assert.equal(
      await countInEveryQueue(sql, (sql) =>
        sql<{ n: number }[]>`
        select count(*)::int as n from queue.messages
         where tenant_id = ${sandboxId}`),
      0,
    );

    // Bo sees none of Ada's rows, and releases none of them.
    const boListed = await outboxOf(bo);
    assert.equal(boListed.parked, 0);
    assert.deepEqual(boListed.parkedRows, []);
    assert.equal(await release(bo, {}), 0);
    assert.equal(await release(bo), 0);
    assert.equal(await release(bo, { messageId: placed1.message_id }), 0);
    assert.equal(
      await release(bo, { service: "orders", eventType: "OrderPlaced" }),
      0,
    );
    assert.deepEqual(await parkedRows(sql, sandboxId), parked);

    // One row, by its message id: that one goes, and is applied by the
    // receivers of OrderPlaced; the others stay parked.
    assert.equal(await release(ada, { messageId: placed1.message_id }), 1);
    await orderSettles(ada, o1.orderId, "placed");
    for (const receiver of ["kitchen", "schedule", "customers"]) {
      assert.equal(
        await rowsWhere(
          sql,
          `${receiver}.inbox`,
          "message_id",
          placed1.message_id,
        ),
        1,
        receiver,
      );
    }
    assert.equal(
      await rowsWhere(sql, "kitchen.cards", "order_id", o1.orderId),
      1,
    );
    assert.equal(
      await rowsWhere(sql, "schedule.bookings", "order_id", o1.orderId),
      2,
    );
    assert.equal(
      await rowsWhere(sql, "customers.history", "order_id", o1.orderId),
      1,
    );
    assert.deepEqual(await parkedRows(sql, sandboxId), [placed2, paid2]);
    // Released and published: owed no more, the queue holds it.
    const orders = t.at("orders");
    assert.equal(
      (await orders`select from orders.outbox
                     where message_id = ${placed1.message_id}`).length,
      0,
    );
    assert.equal(
      (await orders`select from queue.messages
                     where message_id = ${placed1.message_id}`).length,
      1,
    );
    // Fenced: it is no longer parked, so a second release changes nothing.
    assert.equal(await release(ada, { messageId: placed1.message_id }), 0);

    // A group: the sender's parked OrderPlaced rows (O2's).
    assert.equal(
      await release(ada, { service: "orders", eventType: "OrderPlaced" }),
      1,
    );
    await eventually(
      "O2's OrderPlaced to be applied",
      async () =>
        await rowsWhere(
              sql,
              "kitchen.inbox",
              "message_id",
              placed2.message_id,
            ) +
            await rowsWhere(
              sql,
              "schedule.inbox",
              "message_id",
              placed2.message_id,
            ) +
            await rowsWhere(
              sql,
              "customers.inbox",
              "message_id",
              placed2.message_id,
            ) === 3,
    );
    assert.deepEqual(await parkedRows(sql, sandboxId), [paid2]);

    // All that is left: the payment goes, orders applies it, and OrderPaid
    // reaches all six receivers.
    assert.equal(await release(ada), 1);
    await orderSettles(ada, o2.orderId, "paid");
    assert.equal(
      await rowsWhere(sql, "orders.inbox", "message_id", paid2.message_id),
      1,
    );
    const [card] = await t.at("kitchen")`
      select state from kitchen.cards where order_id = ${o2.orderId}`;
    assert.equal(card.state, "confirmed");
    for (
      const table of ["receipts.receipts", "dispatch.stops", "crm.interactions"]
    ) {
      assert.equal(await rowsWhere(sql, table, "order_id", o2.orderId), 1);
    }
    assert.equal(await owed(sql, sandboxId), 0);
    const after = await outboxOf(ada);
    assert.equal(after.parked, 0);
    assert.deepEqual(after.parkedRows, []);
    assert.equal(await release(ada, {}), 0);

    // Every release is logged in its own sandbox, with who and how many.
    assert.deepEqual(await releasesLogged(ada), [
      { actor: "Ada", target: { messageId: placed1.message_id }, count: 1 },
      { actor: "Ada", target: { messageId: placed1.message_id }, count: 0 },
      {
        actor: "Ada",
        target: { service: "orders", eventType: "OrderPlaced" },
        count: 1,
      },
      { actor: "Ada", target: {}, count: 1 },
      { actor: "Ada", target: {}, count: 0 },
    ]);
    assert.deepEqual(await releasesLogged(bo), [
      { actor: "Bo", target: {}, count: 0 },
      { actor: "Bo", target: {}, count: 0 },
      { actor: "Bo", target: { messageId: placed1.message_id }, count: 0 },
      {
        actor: "Bo",
        target: { service: "orders", eventType: "OrderPlaced" },
        count: 0,
      },
    ]);
    // A release is logged beside each sender's outbox: read in every queue.
    const byActor = new Set(
      (await inEveryQueue(
        sql,
        (sql) =>
          sql<{ actor: string; tenant_id: string }[]>`
          select distinct actor, tenant_id from console.operator_actions`,
      ))
        .map((r) => `${r.actor} ${r.tenant_id}`),
    );
    assert.deepEqual([...byActor].sort(), [
      `Ada ${sandboxId}`,
      `Bo ${boSandbox}`,
    ]);
    const log = await (await ada.fetch("/console/actions")).text();
    assert.match(log, /data-testid="action-release"/);
  });
});
