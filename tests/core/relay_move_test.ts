/**
 * The relay's one-transaction move (PgMove, lib/carriers/postgres/move.ts): outbox rows marked
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
import { Ledger } from "../../lib/ledger/mod.ts";
import { claimOutbox } from "../../lib/outbox/mod.ts";
import { MOVE_SLOT_LOCK, PgMove } from "../../lib/carriers/mod.ts";
import { relayOnce } from "../../lib/relay/mod.ts";
import {
  faultyQueue,
  pgFaults,
  RELAY_FAULTS,
  setFault,
} from "../../lib/faults/mod.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { asBookkeeper } from "../../lib/db/service.ts";
import type { Sql } from "../../lib/db/connect.ts";

/** The message ids the test sender published, in the order they were stored. */
async function publishedIds(sql: Sql): Promise<string[]> {
  const rows = await sql<{ message_id: string }[]>`
    select m.message_id from queue.messages m
     where m.source = 't_sender'
     order by (select min(d.id) from queue.deliveries d
                where d.message_id = m.message_id)`;
  return rows.map((r) => r.message_id);
}

/** The move into a Ledger, and the fault decorator of the same queue. */
function faultyMove(sql: Sql) {
  const queue = new Ledger(sql, ROUTING);
  return {
    shortcut: new PgMove(queue),
    faulty: faultyQueue(queue, pgFaults(sql), memoryLogger("warn").logger),
  };
}

Deno.test("a move publishes due rows oldest first with their deliveries, in batches, and leaves faulted sandboxes alone", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const calm = await createSandbox(sql, "calm");
    const faulted = await createSandbox(sql, "faulted");
    const placed = await placeOrders(sql, calm, ["A1", "A2", "A3", "A4", "A5"]);
    await placeOrders(sql, faulted, ["F1", "F2"]);
    await setFault(sql, faulted, RELAY_FAULTS.queueRefusesSends, true);
    // The faulty transport diverts the faulted sandbox: the move skips it.
    const { shortcut, faulty } = faultyMove(sql);
    assert.deepEqual(await faulty.diverted!.list(), [faulted]);
    const skip = faulty.diverted!.query;

    const first = await shortcut.move(SENDER, 3, { skip });
    assert.equal(first.rows, 3);
    assert.equal(first.published, 3);
    // Oldest first.
    assert.deepEqual(
      await publishedIds(sql),
      placed.slice(0, 3).map((e) => e.messageId),
    );
    assert.deepEqual(first.tenantIds, [calm]);
    assert.equal(first.lagSeconds.length, 3);

    const second = await shortcut.move(SENDER, 3, { skip });
    assert.equal(second.rows, 2);
    assert.equal(second.lagSeconds.length, 2);
    const third = await shortcut.move(SENDER, 3, { skip });
    assert.equal(third.rows, 0);

    // Every calm row published once, with one delivery per receiver; the
    // faulted sandbox's rows wait, untouched.
    assert.equal(
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      5,
    );
    assert.equal(
      await count(
        sql,
        `${SENDER}.outbox`,
        sql`state = 'pending' and attempts = 0 and tenant_id = ${faulted}`,
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
    assert.deepEqual(await faulty.diverted!.list(), []);
    const fourth = await shortcut.move(SENDER, 10);
    assert.equal(fourth.rows, 2);
    assert.equal(await count(sql, "queue.messages"), 7);
  });
});

Deno.test("a move reads the switches in its own snapshot: one turned on just before a row leaves that row", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql, "late");
    const { shortcut, faulty } = faultyMove(sql);
    // A list read before the switch went on is empty: the move must not
    // depend on one, however shortly before it was read.
    assert.deepEqual(await faulty.diverted!.list(), []);
    await setFault(sql, sandbox, RELAY_FAULTS.queueRefusesSends, true);
    await placeOrders(sql, sandbox, ["L1"]);
    const moved = await shortcut.move(SENDER, 10, {
      skip: faulty.diverted!.query,
    });
    assert.equal(moved.rows, 0);
    assert.equal(await count(sql, "queue.messages"), 0);
    assert.equal(
      await count(sql, `${SENDER}.outbox`, sql`tenant_id = ${sandbox}`),
      1,
    );

    // Switched off, the same move takes it.
    await setFault(sql, sandbox, RELAY_FAULTS.queueRefusesSends, false);
    const after = await shortcut.move(SENDER, 10, {
      skip: faulty.diverted!.query,
    });
    assert.equal(after.rows, 1);
  });
});

Deno.test("a message the queue already has is not published twice, and its row is still marked", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    const [envelope] = await placeOrders(sql, sandbox, ["D1"]);
    const queue = new Ledger(sql, ROUTING);
    const shortcut = new PgMove(queue);
    // The long way published it and died before marking.
    await queue.publish([{ source: SENDER, envelope }]);
    const moved = await shortcut.move(SENDER, 10);
    assert.equal(moved.rows, 1);
    assert.equal(moved.published, 0);
    assert.equal(await count(sql, "queue.messages"), 1);
    assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);
    assert.equal(
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      1,
    );
  });
});

Deno.test("a move whose batch holds one message the queue has already stores the others once and deletes every row", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    const placed = await placeOrders(sql, sandbox, ["E1", "E2", "E3"]);
    const queue = new Ledger(sql, ROUTING);
    const shortcut = new PgMove(queue);
    // The middle one went the long way and was never marked.
    await queue.publish([{ source: SENDER, envelope: placed[1] }]);
    const moved = await shortcut.move(SENDER, 10);
    assert.equal(moved.rows, 3);
    assert.equal(moved.published, 2);
    assert.deepEqual(
      (await publishedIds(sql)).sort(),
      placed.map((e) => e.messageId).sort(),
    );
    assert.equal(await count(sql, "queue.messages"), 3);
    // All three owed no more, the one the queue had already included.
    assert.equal(await count(sql, `${SENDER}.outbox`), 0);
    // One delivery per message and receiver: none twice, none missing.
    const perMessage = await sql<{ message_id: string; n: number }[]>`
      select message_id, count(*)::int as n from queue.deliveries
       group by message_id order by message_id`;
    assert.deepEqual(
      perMessage.map((r) => r.n),
      [RECEIVERS.length, RECEIVERS.length, RECEIVERS.length],
    );
    assert.equal(
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      3,
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
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 10);
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
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      1,
    );
  });
});

Deno.test("a relay tick drains a backlog with moves side by side: every row once, and it says when more is left", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql, "backlog");
    const orderIds = Array.from({ length: 70 }, (_, i) => `B${i}`);
    await placeOrders(sql, sandbox, orderIds);
    const options = {
      sql,
      service: SENDER,
      queue: new Ledger(sql, ROUTING),
      shortcut: new PgMove(new Ledger(sql, ROUTING)),
      owner: "test-relay",
      log: memoryLogger("warn").logger,
      retryMs: 100,
      batchSize: 3,
      parallel: 2,
    };
    const published = () =>
      count(sql, "queue.messages", sql`source = ${SENDER}`);

    // A first move of 3 finds a full batch; two moves then go side by side,
    // ten each at most: 3 + 2 x 10 x 3 = 63 rows, and more is left.
    const first = await relayOnce(options);
    assert.equal(await published(), 63);
    assert.equal(first.more, true);
    assert.deepEqual(first.touched, [sandbox]);

    // The rest: a side-by-side move finds less than a batch, so the tick
    // says there is nothing more.
    const second = await relayOnce(options);
    assert.equal(await published(), 70);
    assert.equal(second.more, false);

    // Each message once, with one delivery per receiver.
    assert.equal(await count(sql, "queue.messages"), 70);
    assert.equal(await count(sql, "queue.deliveries"), 70 * RECEIVERS.length);
    const [{ n }] = await sql<{ n: number }[]>`
      select count(distinct (message_id, subscriber))::int as n
        from queue.deliveries`;
    assert.equal(n, 70 * RECEIVERS.length);
  });
});

Deno.test("move slots: with every slot of an outbox held by other moves, a move is busy and touches nothing; a relay tick waits a moment", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql, "slots");
    await placeOrders(sql, sandbox, ["S1", "S2", "S3"]);
    const queue = new Ledger(sql, ROUTING);
    const shortcut = new PgMove(queue, { slots: 2 });

    // Two moves in flight elsewhere: two transactions holding both slots,
    // taken the way a move takes one.
    const holders = await Promise.all([sql.reserve(), sql.reserve()]);
    try {
      for (const holder of holders) {
        await holder`begin`;
        const [{ moved }] = await holder<{ moved: number }[]>`
          select count(*)::int as moved from (
            select s from generate_series(0, 1) as s
             where pg_try_advisory_xact_lock(${MOVE_SLOT_LOCK},
                     hashtext(${SENDER}) # s)
             limit 1) x`;
        assert.equal(moved, 1);
      }
      const busy = await shortcut.move(SENDER, 10);
      assert.equal(busy.busy, true);
      assert.equal(busy.rows, 0);
      assert.equal(
        await count(sql, "queue.messages", sql`source = ${SENDER}`),
        0,
      );
      // A third slot would have been free: the limit is the move's.
      const wider = await new PgMove(queue, { slots: 3 })
        .move(SENDER, 1);
      assert.equal(wider.busy, false);
      assert.equal(wider.rows, 1);

      const { logger } = memoryLogger("warn");
      const before = Date.now();
      const tick = await relayOnce({
        sql,
        service: SENDER,
        queue,
        shortcut,
        owner: "test-relay",
        log: logger,
        retryMs: 1000,
      });
      assert.equal(tick.more, false);
      assert.ok(tick.nextDueAt, "a busy relay says when to look again");
      const wait = tick.nextDueAt!.getTime() - before;
      assert.ok(wait > 0 && wait <= 1000, `looks again in ${wait} ms`);
    } finally {
      for (const holder of holders) {
        await holder`rollback`;
        holder.release();
      }
    }
    // Slots free again: the rest moves.
    const after = await shortcut.move(SENDER, 10);
    assert.equal(after.busy, false);
    assert.equal(after.rows, 2);
    assert.equal(
      await count(sql, "queue.messages", sql`source = ${SENDER}`),
      3,
    );
  });
});

Deno.test("a sandbox's new message takes what the sandbox owes along, oldest first, on both of the relay's ways", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const a = await createSandbox(sql, "a");
    const b = await createSandbox(sql, "b");
    // A failed publish leaves a row waiting an hour; the loop guard parks
    // one for good. Each sandbox has one of either.
    const [waiting] = await placeOrders(sql, a, ["A0"]);
    const [parked] = await placeOrders(sql, b, ["B0"]);
    await sql`update t_sender.outbox
                 set attempts = 1, next_attempt_at = now() + interval '1 hour'
               where message_id = ${waiting.messageId}`;
    await sql`update t_sender.outbox
                 set attempts = 1, next_attempt_at = 'infinity'
               where message_id = ${parked.messageId}`;
    const move = new PgMove(new Ledger(sql, ROUTING));
    const claim = () =>
      claimOutbox(sql, SENDER, { owner: "t", limit: 10, leaseMs: 60_000 });
    // Nothing new: nothing is due.
    assert.equal((await move.move(SENDER, 10)).rows, 0);
    assert.deepEqual((await claim()).rows, []);

    // A's next command: the move takes A's waiting row first, then the new
    // one; B's parked row stays.
    const [a1] = await placeOrders(sql, a, ["A1"]);
    const moved = await move.move(SENDER, 10);
    assert.equal(moved.rows, 2);
    assert.deepEqual(await publishedIds(sql), [
      waiting.messageId,
      a1.messageId,
    ]);
    const [{ left }] = await sql`
      select array_agg(message_id)::text[] as left from t_sender.outbox`;
    assert.deepEqual(left, [parked.messageId]);

    // B's next command: the long way's claim takes the parked row with it.
    const [b1] = await placeOrders(sql, b, ["B1"]);
    const claimed = await claim();
    assert.deepEqual(
      claimed.rows.map((r) => r.envelope.messageId),
      [parked.messageId, b1.messageId],
    );
  });
});
