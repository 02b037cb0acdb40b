/**
 * Supersede never applies a message twice. With acknowledgements lost, the
 * customers receiver applies OrderPlaced and its delivery still dies: the
 * supersede endpoint asks the receiver's inbox and answers 409 "already
 * applied", changing nothing. A copy that goes out all the same (the
 * receiver applied the original between the question and the copy) is
 * answered by the receiver as a repeat, applies nothing, and its delivery
 * says so. Over both transports: the copy's `supersedes` must survive the
 * broker.
 */
import assert from "node:assert/strict";
import {
  countOf,
  deadLettersOf,
  deadLettersSettle,
  eventually,
  placeOrderVia,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";
import { countInEveryQueue } from "./_console_ops.ts";
import { asService } from "../lib/db/service.ts";
import { supersedeIn } from "../lib/ledger/mod.ts";

async function customersDeadLetter(t: TestBakery) {
  const client = t.client();
  const { sandboxId } = await signIn(client, "Supersede operator");
  const { status } = await client.json("PUT", "/api/console/faults", {
    lostAcks: true,
  });
  assert.equal(status, 200);
  const { orderId } = await placeOrderVia(client);
  const [dead] = await deadLettersSettle(
    client,
    1,
    "subscriber=customers",
    20_000,
  );
  assert.match(dead.lastError ?? "", /acknowledgement lost/);
  // The receivers take acknowledged deliveries again: a copy sent now would
  // be applied and acknowledged.
  await client.json("PUT", "/api/console/faults", { lostAcks: false });
  return { client, sandboxId, orderId, dead };
}

function historyRows(t: TestBakery, orderId: string) {
  return countOf(t.at("customers")<{ n: number }[]>`
    select count(*)::int as n from customers.history
     where order_id = ${orderId}`);
}

/** The payload of a message of orders, in its queue. */
async function payloadOf(t: TestBakery, messageId: string) {
  const [row] = await t.at("orders")<{ payload: Record<string, unknown> }[]>`
    select envelope->'payload' as payload from queue.messages
     where message_id = ${messageId}`;
  return row.payload;
}

async function refusedAsApplied(t: TestBakery) {
  const { client, orderId, dead } = await customersDeadLetter(t);
  const [inbox] = await t.at("customers")<{ status: number }[]>`
    select status from customers.inbox where message_id = ${dead.messageId}`;
  assert.equal(inbox?.status, 200, "the receiver applied the dead letter");
  assert.equal(await historyRows(t, orderId), 1);
  // Counted in every queue.
  const count = (table: string) =>
    countInEveryQueue(
      t.sql,
      (sql) =>
        sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`,
    );
  const messagesBefore = await count("queue.messages");

  const answer = await client.json<{ error: string; issues: unknown[] }>(
    "POST",
    `/api/console/dead-letters/${dead.id}/supersede`,
    { payload: await payloadOf(t, dead.messageId), reason: "send it again" },
  );
  assert.equal(answer.status, 409, JSON.stringify(answer.body));
  assert.deepEqual(answer.body, {
    error:
      `already applied: customers has message ${dead.messageId} in its inbox`,
    issues: [],
  });

  // Nothing changed: no copy, no link, no log entry; still a dead letter.
  assert.equal(await count("queue.messages"), messagesBefore);
  assert.equal(await count("queue.supersessions"), 0);
  const { body: log } = await client.json<{ items: { action: string }[] }>(
    "GET",
    "/api/console/actions",
  );
  // The fault switches flipped to make the dead letter are logged; nothing else.
  assert.deepEqual(log.items.filter((a) => a.action !== "fault"), []);
  assert.deepEqual(
    (await deadLettersOf(client, "subscriber=customers")).map((d) => d.id),
    [dead.id],
  );
  assert.equal(await historyRows(t, orderId), 1);
}

async function copyAnsweredAsRepeat(t: TestBakery, republish: boolean) {
  const { client, sandboxId, orderId, dead } = await customersDeadLetter(t);
  // The endpoint's question came too early (the original committed right
  // after it): the copy goes out as the endpoint would have sent it.
  const payload = await payloadOf(t, dead.messageId);
  // In the queue of the dead letter's sender, orders.
  const queue = t.at("orders");
  const copy = await asService(
    queue,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) =>
      supersedeIn(
        sql,
        sandboxId,
        dead.id,
        payload,
        "Supersede operator",
        "raced the inbox",
        { republish },
      ),
  );
  assert.ok(copy);
  const [stored] = await queue<{ supersedes: string[] }[]>`
    select envelope->'supersedes' as supersedes from queue.messages
     where message_id = ${copy.messageId}`;
  assert.deepEqual(stored.supersedes, [dead.messageId]);

  let delivery: { state: string; last_status: number; last_error: string };
  await eventually("the copy's delivery to finish", async () => {
    [delivery] = await queue<typeof delivery[]>`
      select state, last_status, last_error from queue.deliveries
       where id = ${copy.deliveryId}`;
    return delivery.state !== "pending" && delivery.state !== "in_flight";
  }, 20_000);
  const reason =
    `already applied: customers has message ${dead.messageId} in its inbox`;
  // Done, applied once, and the delivery says why nothing was applied.
  assert.deepEqual(delivery!, {
    state: "done",
    last_status: 200,
    last_error: `Customers answered 200: ${reason}`,
  });
  const [inbox] = await t.at("customers")<
    { status: number; outcome: unknown }[]
  >`
    select status, outcome from customers.inbox
     where message_id = ${copy.messageId}`;
  assert.deepEqual(inbox, {
    status: 200,
    outcome: { alreadyApplied: dead.messageId, reason },
  });
  assert.equal(await historyRows(t, orderId), 1);
  const { body: detail } = await client.json<{
    delivery: { lastError: string };
    envelope: { supersedes?: string[] };
  }>("GET", `/api/console/deliveries/${copy.deliveryId}`);
  assert.equal(detail.delivery.lastError, `Customers answered 200: ${reason}`);
  assert.deepEqual(detail.envelope.supersedes, [dead.messageId]);
}

const JETSTREAM = () => ({
  QUEUE: "jetstream",
  NATS_URL: TEST_NATS_URL,
  NATS_STREAM: testStream(),
});

Deno.test("supersede of a dead letter its receiver applied (lost acknowledgement): 409 already applied, nothing sent, one history row", async () => {
  await withTestBakery(refusedAsApplied);
});

Deno.test("a copy that goes out all the same is answered as a repeat: applied once, and its delivery says why", async () => {
  await withTestBakery((t) => copyAnsweredAsRepeat(t, false));
});

natsTest(
  "over JetStream: supersede of an applied dead letter is 409, nothing sent",
  async () => {
    await withTestBakery(refusedAsApplied, JETSTREAM());
  },
);

natsTest(
  "over JetStream: a copy's supersedes survives the broker, and the receiver answers it as a repeat",
  async () => {
    await withTestBakery((t) => copyAnsweredAsRepeat(t, true), JETSTREAM());
  },
);
