/**
 * Supersede a poison message, and the replay horizon, through the console
 * API. A corrected payload goes under a new message id to the same
 * receiver, checked against the event type's schema (400 naming the field),
 * linked to the original, which is refused "superseded by <id>" with its
 * envelope untouched; over both transports. A dead letter older than the
 * receivers' replay horizon is marked, and its redrive is a 409 unless
 * forced.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersOf,
  deadLettersSettle,
  type DeliveryJson,
  eventually,
  placeOrderVia,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";
import { copyDeadLetter } from "./_console_ops.ts";

async function kitchenDeadLetter(t: TestBakery) {
  const client = t.client();
  await signIn(client, "Supersede operator");
  const { status } = await client.json("PUT", "/api/console/faults", {
    kitchenRefuses: true,
  });
  assert.equal(status, 200);
  const { orderId } = await placeOrderVia(client);
  const [dead] = await deadLettersSettle(client, 1, "subscriber=kitchen");
  return { client, orderId, dead };
}

/** The envelope of a message of orders, in its queue. */
async function envelopeOf(t: TestBakery, messageId: string) {
  const [row] = await t.at("orders")<{ envelope: Record<string, unknown> }[]>`
    select envelope from queue.messages where message_id = ${messageId}`;
  return row.envelope;
}

async function supersedes(t: TestBakery) {
  const { client, orderId, dead } = await kitchenDeadLetter(t);
  const original = await envelopeOf(t, dead.messageId);
  const payload = original.payload as Record<string, unknown>;
  const post = (body: unknown) =>
    client.json<{ error: string; issues: { path: string }[] }>(
      "POST",
      `/api/console/dead-letters/${dead.id}/supersede`,
      body,
    );

  // Bad payloads: 400 naming the field, and nothing changes.
  const lines = payload.lines as Record<string, unknown>[];
  for (
    const [body, path] of [
      [{
        payload: { ...payload, lines: [{ ...lines[0], qty: "two" }] },
        reason: "fix",
      }, "payload.lines.0.qty"],
      [{ payload: { ...payload, extra: 1 }, reason: "fix" }, "payload.extra"],
      [
        {
          payload: { ...payload, orderId: crypto.randomUUID() },
          reason: "fix",
        },
        "payload.orderId",
      ],
      [{ payload }, "reason"],
      // Checked by the event's own schema, at the field's own path.
      [
        { payload: { ...payload, day: "to\u0000day" }, reason: "fix" },
        "payload.day",
      ],
      [
        {
          payload: {
            ...payload,
            customer: { name: "A\u0000da", email: "ada@example.com" },
          },
          reason: "fix",
        },
        "payload.customer.name",
      ],
      [{ reason: "fix" }, "payload"],
    ] as [unknown, string][]
  ) {
    const answer = await post(body);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.deepEqual(answer.body.issues.map((i) => i.path), [path]);
    assert.match(answer.body.error, new RegExp(path.replaceAll(".", "\\.")));
  }
  assert.deepEqual((await deadLettersOf(client)).map((d) => d.id), [dead.id]);

  // A corrected copy, once the kitchen takes deliveries again.
  await client.json("PUT", "/api/console/faults", { kitchenRefuses: false });
  const corrected = {
    ...payload,
    customer: { name: "Ada Baker (corrected)", email: "ada@example.com" },
  };
  const done = await post({ payload: corrected, reason: "name fixed" });
  assert.equal(done.status, 201, JSON.stringify(done.body));
  const { messageId, deliveryId } = done.body as unknown as {
    messageId: string;
    deliveryId: number;
  };
  assert.notEqual(messageId, dead.messageId);

  // The copy is delivered to the kitchen only, under the new id.
  await eventually("the corrected copy applied by the kitchen", async () => {
    const [row] = await t.at("kitchen")<{ n: number }[]>`
      select count(*)::int as n from kitchen.inbox
       where message_id = ${messageId}`;
    return row.n === 1;
  }, 20_000);
  const copies = await t.at("orders")<
    { id: string; subscriber: string; state: string }[]
  >`
    select id, subscriber, state from queue.deliveries
     where message_id = ${messageId}`;
  assert.deepEqual(
    copies.map((d) => [Number(d.id), d.subscriber]),
    [[deliveryId, "kitchen"]],
  );
  const copy = await envelopeOf(t, messageId);
  assert.deepEqual(copy.payload, corrected);
  assert.equal(copy.aggregateId, orderId);
  assert.equal(copy.type, original.type);

  // The original: refused "superseded by <id>", linked, envelope unchanged.
  const { body: detail } = await client.json<{
    delivery: DeliveryJson;
    supersededBy: { messageId: string; deliveryId: number } | null;
  }>("GET", `/api/console/deliveries/${dead.id}`);
  assert.deepEqual(
    [detail.supersededBy?.messageId, detail.supersededBy?.deliveryId],
    [messageId, deliveryId],
  );
  const { body: copyDetail } = await client.json<{ supersedes: number }>(
    "GET",
    `/api/console/deliveries/${deliveryId}`,
  );
  assert.equal(copyDetail.supersedes, dead.id);
  assert.equal(detail.delivery.state, "refused");
  assert.equal(detail.delivery.refusedReason, `superseded by ${messageId}`);
  assert.equal(detail.delivery.refusedBy, "Supersede operator");
  assert.deepEqual(await envelopeOf(t, dead.messageId), original);
  const [link] = await t.at("orders")<{ message_id: string; reason: string }[]>`
    select message_id, reason from queue.supersessions
     where delivery_id = ${dead.id}`;
  assert.deepEqual(link, { message_id: messageId, reason: "name fixed" });

  // Not a dead letter any more: 404; the operator log has the supersede.
  assert.equal(
    (await post({ payload: corrected, reason: "again" })).status,
    404,
  );
  const { body: log } = await client.json<{
    items: { action: string; count: number }[];
  }>("GET", "/api/console/actions");
  assert.deepEqual(
    log.items.filter((a) => a.action !== "fault").map((a) => [
      a.action,
      a.count,
    ]),
    [["supersede", 1]],
  );
}

Deno.test("supersede: a corrected payload under a new id, checked (400 naming the field), linked, the original refused and untouched", async () => {
  await withTestBakery(supersedes);
});

natsTest(
  "supersede over JetStream: the corrected copy reaches the receiver through the broker",
  async () => {
    await withTestBakery(supersedes, {
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: testStream(),
    });
  },
);

async function horizon(t: TestBakery, client: Client, dead: DeliveryJson) {
  // The kitchen's OrderPlaced: a message of orders, in its queue.
  const queue = t.at("orders");
  const [old] = await copyDeadLetter(
    queue,
    dead.id,
    1,
    new Date(Date.now() - 31 * 86_400_000),
  );
  const [inside] = await copyDeadLetter(
    queue,
    dead.id,
    1,
    new Date(Date.now() - 29 * 86_400_000),
  );
  const items = await deadLettersOf(client);
  const marked = Object.fromEntries(
    items.map((
      d,
    ) => [
      d.id,
      (d as unknown as { beyondReplayHorizon: boolean }).beyondReplayHorizon,
    ]),
  );
  assert.deepEqual(marked, { [dead.id]: false, [old]: true, [inside]: false });

  // One beyond the horizon: its redrive is a 409 with the reason.
  const one = await client.json<{ error: string }>(
    "POST",
    `/api/console/dead-letters/${old}/redrive`,
  );
  assert.equal(one.status, 409);
  assert.match(one.body.error, /replay horizon of 30 days/);
  assert.match(one.body.error, /"force": true/);
  // All matching, with it among them: 409 too, and nothing redriven.
  const all = await client.json(
    "POST",
    "/api/console/dead-letters/redrive",
    {},
  );
  assert.equal(all.status, 409);
  const dry = await client.json("POST", "/api/console/dead-letters/redrive", {
    dryRun: true,
  });
  const { preview: _, ...counted } = dry.body as { preview: unknown };
  assert.deepEqual(counted, { count: 3, beyondReplayHorizon: 1 });
  assert.equal((await deadLettersOf(client)).length, 3);

  // Inside the horizon: redriven as usual. Forced: redriven too.
  const ok = await client.json(
    "POST",
    `/api/console/dead-letters/${inside}/redrive`,
  );
  assert.equal(ok.status, 202);
  const forced = await client.json(
    "POST",
    `/api/console/dead-letters/${old}/redrive`,
    { force: true },
  );
  assert.equal(forced.status, 202);
  const [row] = await queue<{ redrives: number }[]>`
    select redrives from queue.deliveries where id = ${old}`;
  assert.equal(row.redrives, 1);
  const { body: log } = await client.json<{
    items: { action: string; target: Record<string, unknown> }[];
  }>("GET", "/api/console/actions");
  assert.deepEqual(log.items[0].target, { ids: [old], force: true });
}

Deno.test("replay horizon: a dead letter older than it is marked; its redrive is 409 with the reason unless forced", async () => {
  await withTestBakery(async (t) => {
    const { client, dead } = await kitchenDeadLetter(t);
    await horizon(t, client, dead);
  });
});
