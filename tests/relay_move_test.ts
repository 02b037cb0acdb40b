/**
 * The relay's one-transaction move (PgQueue.moveFrom): outbox rows marked
 * published together with their messages and deliveries, faulted sandboxes
 * left for the long way, and the relay role's narrow rights.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrders,
  RECEIVERS,
  ROUTING,
  SENDER,
} from "./_messaging.ts";
import { PgQueue } from "../lib/queue/publish.ts";
import { RELAY_FAULTS } from "../lib/relay/mod.ts";
import { setFault } from "../lib/faults/mod.ts";
import { asBookkeeper } from "../lib/db/service.ts";

const FAULTS = Object.values(RELAY_FAULTS);

Deno.test("a move publishes due rows oldest first with their deliveries, in batches, and leaves faulted sandboxes alone", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const calm = await createSandbox(sql, "calm");
    const faulted = await createSandbox(sql, "faulted");
    const placed = await placeOrders(sql, calm, ["A1", "A2", "A3", "A4", "A5"]);
    await placeOrders(sql, faulted, ["F1", "F2"]);
    await setFault(sql, faulted, RELAY_FAULTS.queueRefusesSends, true);
    const queue = new PgQueue(sql, ROUTING);

    const first = await queue.moveFrom(SENDER, 3, FAULTS);
    assert.equal(first.rows, 3);
    assert.equal(first.published, 3);
    assert.equal(first.faulted, true);
    assert.deepEqual(
      first.messageIds,
      placed.slice(0, 3).map((e) => e.messageId),
    );
    assert.deepEqual(first.sandboxIds, [calm]);
    assert.equal(first.lagSeconds.length, 3);

    const second = await queue.moveFrom(SENDER, 3, FAULTS);
    assert.equal(second.rows, 2);
    const third = await queue.moveFrom(SENDER, 3, FAULTS);
    assert.equal(third.rows, 0);

    // Every calm row published once, with one delivery per receiver; the
    // faulted sandbox's rows wait, untouched.
    assert.equal(
      await count(sql, `${SENDER}.outbox`, sql`state = 'published'`),
      5,
    );
    assert.equal(
      await count(
        sql,
        `${SENDER}.outbox`,
        sql`state = 'pending' and attempts = 0 and sandbox_id = ${faulted}`,
      ),
      2,
    );
    assert.equal(await count(sql, "queue.messages"), 5);
    assert.equal(
      await count(sql, "queue.deliveries", sql`state = 'pending'`),
      5 * RECEIVERS.length,
    );
    // Deliveries in message order: one aggregate's messages stay in order.
    const ids = await sql<{ message_id: string }[]>`
      select message_id from queue.deliveries group by message_id
       order by min(id)`;
    assert.deepEqual(
      ids.map((r) => r.message_id),
      placed.map((e) => e.messageId),
    );

    // Once the fault is off, the next move takes them.
    await setFault(sql, faulted, RELAY_FAULTS.queueRefusesSends, false);
    const fourth = await queue.moveFrom(SENDER, 10, FAULTS);
    assert.equal(fourth.rows, 2);
    assert.equal(fourth.faulted, false);
    assert.equal(await count(sql, "queue.messages"), 7);
  });
});

Deno.test("a message the queue already has is not published twice, and its row is still marked", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    const [envelope] = await placeOrders(sql, sandbox, ["D1"]);
    const queue = new PgQueue(sql, ROUTING);
    // The long way published it and died before marking.
    await queue.publish([{ source: SENDER, envelope }]);
    const moved = await queue.moveFrom(SENDER, 10, FAULTS);
    assert.equal(moved.rows, 1);
    assert.equal(moved.published, 0);
    assert.equal(await count(sql, "queue.messages"), 1);
    assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);
    assert.equal(
      await count(sql, `${SENDER}.outbox`, sql`state = 'published'`),
      1,
    );
  });
});

Deno.test("the relay role may mark outbox rows and add to the queue, nothing else; an envelope stays immutable", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    await placeOrders(sql, sandbox, ["R1"]);
    await assert.rejects(
      () =>
        asBookkeeper(
          sql,
          "relay",
          ({ sql }) => sql`select * from t_sender.orders`,
        ),
      /permission denied/,
    );
    await assert.rejects(
      () =>
        asBookkeeper(
          sql,
          "relay",
          ({ sql }) => sql`update queue.deliveries set state = 'done'`,
        ),
      /permission denied/,
    );
    await assert.rejects(
      () =>
        asBookkeeper(sql, "relay", ({ sql }) =>
          sql`update t_sender.outbox
                 set envelope = envelope || '{"type": "Changed"}'`),
      /immutable/,
    );
    await new PgQueue(sql, ROUTING).moveFrom(SENDER, 10, FAULTS);
    await assert.rejects(
      () =>
        asBookkeeper(
          sql,
          "queue",
          ({ sql }) =>
            sql`update queue.messages set message_id = gen_random_uuid()`,
        ),
      /immutable/,
    );
    // Updates that leave the envelope alone pass.
    assert.equal(
      await count(sql, `${SENDER}.outbox`, sql`state = 'published'`),
      1,
    );
  });
});
