/**
 * A superseding copy is checked as its receiver checks it: by the event
 * type's own schema (services/events.ts), strict at every depth, with real
 * days and bounded quantities and cents. What the receiver would refuse is
 * a 400 naming the field, and nothing is sent. A malformed message that
 * reaches a receiver anyway (written by hand, or before the schemas
 * tightened) is refused there, 422 with a refusal row, never a 500 that is
 * retried, and never applied.
 */
import assert from "node:assert/strict";
import { asService } from "../lib/db/service.ts";
import { append, newEnvelope, uuidv7 } from "../lib/outbox/mod.ts";
import { supersedeIn } from "../lib/ledger/mod.ts";
import {
  countOf,
  deadLettersSettle,
  placeOrderVia,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";

type ErrorBody = { error: string; issues: { path: string }[] };

/** A signed-in operator with one dead letter: the kitchen's OrderPlaced. */
async function kitchenDeadLetter(t: TestBakery) {
  const client = t.client();
  const { sandboxId } = await signIn(client, "Payload operator");
  const on = await client.json("PUT", "/api/console/faults", {
    kitchenRefuses: true,
  });
  assert.equal(on.status, 200);
  const { orderId } = await placeOrderVia(client);
  const [dead] = await deadLettersSettle(client, 1, "subscriber=kitchen");
  // The kitchen takes deliveries again: a copy sent now would be applied.
  const off = await client.json("PUT", "/api/console/faults", {
    kitchenRefuses: false,
  });
  assert.equal(off.status, 200);
  const [{ envelope }] = await t.at("orders")<
    { envelope: { payload: Record<string, unknown> } }[]
  >`select envelope from queue.messages where message_id = ${dead.messageId}`;
  return { client, sandboxId, orderId, dead, envelope };
}

/** The rows a supersede writes, and the kitchen's card of the order. */
async function written(t: TestBakery, orderId: string) {
  const queue = t.at("orders");
  return {
    messages: await queue<{ message_id: string; envelope: unknown }[]>`
      select message_id, envelope from queue.messages order by message_id`,
    deliveries: await queue<{ id: string; state: string }[]>`
      select id, state from queue.deliveries order by id`,
    supersessions: await countOf(queue<{ n: number }[]>`
      select count(*)::int as n from queue.supersessions`),
    actions: await countOf(queue<{ n: number }[]>`
      select count(*)::int as n from queue.actions`),
    cards: await countOf(t.at("kitchen")<{ n: number }[]>`
      select count(*)::int as n from kitchen.cards
       where order_id = ${orderId}`),
  };
}

Deno.test("supersede: a payload its receiver would refuse is a 400 naming the field, and nothing is sent", async () => {
  await withTestBakery(async (t) => {
    const { client, orderId, dead, envelope } = await kitchenDeadLetter(t);
    const payload = envelope.payload;
    const lines = payload.lines as Record<string, unknown>[];
    const customer = payload.customer as Record<string, unknown>;
    const before = await written(t, orderId);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...payload, day: "javascript:alert(3)" }, "payload.day"],
      [{ ...payload, day: "2026-02-30" }, "payload.day"],
      [
        { ...payload, lines: [{ ...lines[0], qty: -5 }] },
        "payload.lines.0.qty",
      ],
      [{ ...payload, totalCents: -1 }, "payload.totalCents"],
      [
        { ...payload, lines: [{ ...lines[0], unitCents: 99999999999 }] },
        "payload.lines.0.unitCents",
      ],
      [{ ...payload, customer: { ...customer, x: 1 } }, "payload.customer.x"],
      [{ ...payload, lines: [{ ...lines[0], x: 1 }] }, "payload.lines.0.x"],
      // Valid one by one, but not what the lines add up to.
      [
        { ...payload, totalCents: (payload.totalCents as number) + 1 },
        "payload.totalCents",
      ],
    ];
    for (const [body, path] of cases) {
      const answer = await client.json<ErrorBody>(
        "POST",
        `/api/console/dead-letters/${dead.id}/supersede`,
        { payload: body, reason: "fix" },
      );
      assert.equal(answer.status, 400, `${path}: ${JSON.stringify(answer)}`);
      assert.deepEqual(answer.body.issues.map((i) => i.path), [path]);
      assert.match(answer.body.error, new RegExp(path.replaceAll(".", "\\.")));
      assert.deepEqual(await written(t, orderId), before, path);
    }
    const [row] = await t.at("orders")<{ state: string }[]>`
      select state from queue.deliveries where id = ${dead.id}`;
    assert.equal(row.state, "dead");
  });
});

Deno.test("receiver: a malformed copy sent anyway is refused, 422 with a refusal row, never retried or applied", async () => {
  await withTestBakery(async (t) => {
    const { client, sandboxId, orderId, dead, envelope } =
      await kitchenDeadLetter(t);
    // By hand, past the console's check: as a copy made before the schemas
    // tightened would have been.
    const copy = await asService(
      t.at("orders"),
      "queue",
      { tenantId: sandboxId },
      ({ sql }) =>
        supersedeIn(
          sql,
          sandboxId,
          dead.id,
          {
            ...envelope.payload,
            day: "javascript:alert(3)",
          },
          "Payload operator",
          "by hand",
          {
            republish: Deno.env.get("TEST_QUEUE") === "jetstream",
          },
        ),
    );
    assert.ok(copy);
    const reason = "malformed: day: a date such as 2026-12-01";
    const [refused] = await deadLettersSettle(client, 1, "subscriber=kitchen");
    assert.deepEqual(
      [refused.messageId, refused.attempts, refused.lastStatus],
      [copy.messageId, 1, 422],
    );
    assert.equal(refused.lastError, `Kitchen answered 422: ${reason}`);
    const rows = await t.at("kitchen")`
      select message_id, reason from kitchen.refusals`;
    assert.deepEqual([...rows], [{ message_id: copy.messageId, reason }]);
    const cards = await t.at("kitchen")`
      select order_id from kitchen.cards where order_id = ${orderId}`;
    assert.equal(cards.length, 0);
  });
});

Deno.test("receivers: a hand-written OrderPlaced with qty -5 is refused by each receiver with a row, and applied by none", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Payload operator");
    const orderId = uuidv7();
    const poison = newEnvelope({
      type: "OrderPlaced",
      aggregateId: orderId,
      aggregateVersion: 1,
      tenantId: sandboxId,
      payload: {
        orderId,
        lines: [{
          sku: "cardamom-bun",
          name: "Cardamom bun",
          qty: -5,
          unitCents: 350,
        }],
        totalCents: -1750,
        customer: { name: "Ada Baker", email: "ada@example.com" },
        fulfilment: "pickup",
        day: new Date().toISOString().slice(0, 10),
      },
    });
    await asService(
      t.sql,
      "orders",
      { tenantId: sandboxId },
      (tx) => append(tx, [poison]),
    );
    const reason = "malformed: lines.0.qty: at least 1 (and 1 more)";
    const dead = await deadLettersSettle(client, 3);
    assert.deepEqual(
      dead.map((d) => [d.subscriber, d.attempts, d.lastStatus]).sort(),
      [["customers", 1, 422], ["kitchen", 1, 422], ["schedule", 1, 422]],
    );
    for (const service of ["customers", "kitchen", "schedule"]) {
      const refusals = await t.at(service)`
        select message_id, reason from ${t.at(service)(`${service}.refusals`)}`;
      assert.deepEqual([...refusals], [{
        message_id: poison.messageId,
        reason,
      }], service);
    }
    const applied = [
      await countOf(t.at("kitchen")<{ n: number }[]>`
        select count(*)::int as n from kitchen.cards`),
      await countOf(t.at("schedule")<{ n: number }[]>`
        select count(*)::int as n from schedule.bookings`),
      await countOf(t.at("customers")<{ n: number }[]>`
        select count(*)::int as n from customers.history`),
    ];
    assert.deepEqual(applied, [0, 0, 0]);
  });
});
