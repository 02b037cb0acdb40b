/**
 * Pause and resume a receiver, per sandbox, through the console API
 * (`PUT /api/console/receivers/:name`): refused input changes nothing, a
 * change leaves its audit row, and while a receiver is paused its
 * deliveries wait (no attempt, not dead, well past the whole retry
 * schedule) while the other receivers, and the same receiver in another
 * sandbox, deliver; a resume delivers them. On either transport
 * (TEST_QUEUE=jetstream).
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import {
  type Client,
  countOf,
  eventually,
  type OrderJson,
  orderSettles,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { queuePools } from "../services/databases.ts";

async function setPaused(client: Client, name: string, paused: boolean) {
  const answer = await client.json<
    { name: string; paused: boolean; changed: boolean }
  >("PUT", `/api/console/receivers/${name}`, { paused });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.name, name);
  assert.equal(answer.body.paused, paused);
  return answer.body;
}

async function isPaused(client: Client, name: string): Promise<boolean> {
  const answer = await client.json<{ name: string; paused: boolean }>(
    "GET",
    `/api/console/receivers/${name}`,
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.paused;
}

async function order(client: Client, orderId: string): Promise<OrderJson> {
  const { status, body } = await client.json<OrderJson>(
    "GET",
    `/api/orders/${orderId}`,
  );
  assert.equal(status, 200);
  return body;
}

/** The attempt rows of the order's deliveries to `subscriber`. */
async function attemptsOf(sql: Sql, orderId: string, subscriber: string) {
  return await countOf(sql<{ n: number }[]>`
    select count(*)::int as n from queue.attempt_log a
      join queue.deliveries d on d.id = a.delivery_id
     where d.aggregate_id = ${orderId} and d.subscriber = ${subscriber}`);
}

Deno.test("pause: unknown receivers are a 404, bad bodies a 400 naming the field, no CSRF a 403, no session a 401; a change leaves one audit row", async () => {
  await withTestBakery(async (t) => {
    const guest = t.client();
    const unsigned = await guest.json("PUT", "/api/console/receivers/kitchen", {
      paused: true,
    });
    assert.equal(unsigned.status, 401);

    const client = t.client();
    const { sandboxId } = await signIn(client, "Pause operator");
    const unknown = await client.json<{ error: string }>(
      "PUT",
      "/api/console/receivers/oven",
      { paused: true },
    );
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.error, /no such receiver/);
    assert.equal(
      (await client.json("GET", "/api/console/receivers/oven")).status,
      404,
    );

    const bad: [unknown, string][] = [
      [{}, "paused"],
      [{ paused: "yes" }, "paused"],
      [{ paused: 1 }, "paused"],
      [{ paused: null }, "paused"],
      [{ paused: true, until: "later" }, "until"],
    ];
    for (const [input, field] of bad) {
      const answer = await client.json<
        { error: string; issues: { path: string }[] }
      >("PUT", "/api/console/receivers/kitchen", input);
      assert.equal(answer.status, 400, JSON.stringify(input));
      assert.ok(
        answer.body.issues.some((i) => i.path === field),
        JSON.stringify(answer.body),
      );
    }
    for (const input of [[], "paused", null, true]) {
      const answer = await client.json(
        "PUT",
        "/api/console/receivers/kitchen",
        input,
      );
      assert.equal(answer.status, 400, JSON.stringify(input));
    }
    const forged = await client.withOrigin("https://elsewhere.example").json(
      "PUT",
      "/api/console/receivers/kitchen",
      { paused: true },
    );
    assert.equal(forged.status, 403);
    const noOrigin = await client.withOrigin(null).json(
      "PUT",
      "/api/console/receivers/kitchen",
      { paused: true },
    );
    assert.equal(noOrigin.status, 403);
    for (const sql of queuePools(t.sql)) {
      assert.equal(
        await countOf(sql<{ n: number }[]>`
          select count(*)::int as n from queue.pauses`),
        0,
      );
    }
    assert.equal(await isPaused(client, "kitchen"), false);

    // A pause, then the same again (unchanged), then a resume: two rows.
    assert.equal((await setPaused(client, "kitchen", true)).changed, true);
    assert.equal((await setPaused(client, "kitchen", true)).changed, false);
    assert.equal(await isPaused(client, "kitchen"), true);
    assert.equal(await isPaused(client, "schedule"), false);
    const listed = await client.json<
      { receivers: { name: string; paused: boolean }[] }
    >("GET", "/api/console/receivers");
    assert.deepEqual(
      listed.body.receivers.filter((r) => r.paused).map((r) => r.name),
      ["kitchen"],
    );
    const other = t.client();
    await signIn(other, "Other operator");
    assert.equal(await isPaused(other, "kitchen"), false);
    const otherListed = await other.json<
      { receivers: { name: string; paused: boolean }[] }
    >("GET", "/api/console/receivers");
    assert.ok(otherListed.body.receivers.every((r) => !r.paused));
    assert.equal((await setPaused(client, "kitchen", false)).changed, true);
    assert.equal(await isPaused(client, "kitchen"), false);
    // A pause is set in every queue (each sender's in split mode), each
    // with its audit rows.
    for (const sql of queuePools(t.sql)) {
      const actions = await sql<
        {
          tenant_id: string;
          subscriber: string;
          action: string;
          actor: string;
        }[]
      >`select tenant_id, subscriber, action, actor from queue.pause_actions
         order by id`;
      assert.deepEqual(actions.map((a) => ({ ...a })), [
        {
          tenant_id: sandboxId,
          subscriber: "kitchen",
          action: "pause",
          actor: "Pause operator",
        },
        {
          tenant_id: sandboxId,
          subscriber: "kitchen",
          action: "resume",
          actor: "Pause operator",
        },
      ]);
    }
    // The operator log has both, newest first, and its page shows them;
    // another sandbox's log has neither.
    const log = await client.json<
      { items: { action: string; actor: string; target: unknown }[] }
    >("GET", "/api/console/actions");
    assert.equal(log.status, 200);
    assert.deepEqual(
      log.body.items.map((a) => [a.action, a.actor, a.target]),
      [
        ["resume", "Pause operator", { subscriber: "kitchen" }],
        ["pause", "Pause operator", { subscriber: "kitchen" }],
      ],
    );
    const page = await (await client.fetch("/console/actions")).text();
    assert.match(page, /data-testid="action-resume"/);
    assert.match(page, /data-testid="action-pause"/);
    assert.match(page, /receiver: Kitchen/);
    const otherLog = await other.json<{ items: unknown[] }>(
      "GET",
      "/api/console/actions",
    );
    assert.deepEqual(otherLog.body.items, []);
    const empty = await (await other.fetch("/console/actions")).text();
    assert.match(empty, /data-testid="actions-empty"/);
  });
});

Deno.test("pause: a paused receiver's deliveries wait, unattempted and never dead, while others deliver; a resume delivers them", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Pause operator");
    const other = t.client();
    await signIn(other, "Other operator");
    await setPaused(client, "kitchen", true);

    const { orderId } = await placeOrderVia(client);
    const { orderId: otherId } = await placeOrderVia(other);
    // The other sandbox's kitchen delivers as ever.
    await orderSettles(other, otherId, "placed");
    // Here, the other receivers of OrderPlaced are done.
    await eventually(
      "the receivers that are not paused to be done",
      async () => {
        const { deliveries } = await order(client, orderId);
        return deliveries.length === 3 &&
          deliveries.every((d) =>
            d.subscriber === "kitchen" || d.state === "done"
          );
      },
    );
    // Well past the whole retry schedule (100, 200 and 300 ms), the
    // kitchen's delivery still waits: pending, never attempted, not dead.
    const schedule = t.bakery.deps.config.RETRY_DELAYS_MS
      .reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, schedule * 3 + 1000));
    const waiting = (await order(client, orderId)).deliveries
      .filter((d) => d.subscriber === "kitchen");
    assert.equal(waiting.length, 1);
    assert.equal(waiting[0].state, "pending");
    assert.equal(waiting[0].attempts, 0);
    assert.equal(waiting[0].lastError, null);
    // OrderPlaced's deliveries: in orders' queue.
    assert.equal(await attemptsOf(t.at("orders"), orderId, "kitchen"), 0);
    const dead = await client.json<{ items: unknown[] }>(
      "GET",
      "/api/console/dead-letters",
    );
    assert.deepEqual(dead.body.items, []);
    const closure = await client.json<
      { bySubscriber: Record<string, Record<string, number>> }
    >("GET", "/api/console/closure");
    assert.equal(closure.body.bySubscriber.kitchen.inFlight, 1);
    assert.equal(closure.body.bySubscriber.kitchen.dead, 0);
    const board = await client.json<{ cards: unknown[] }>(
      "GET",
      "/api/kitchen/board",
    );
    assert.deepEqual(board.body.cards, []);

    await setPaused(client, "kitchen", false);
    const done = await orderSettles(client, orderId, "placed");
    const kitchen = done.deliveries.find((d) => d.subscriber === "kitchen")!;
    assert.equal(kitchen.attempts, 1);
    assert.equal(await attemptsOf(t.at("orders"), orderId, "kitchen"), 1);
    assert.equal(done.kitchenCard?.state, "new");
  });
});
