/**
 * A receiver's batch as one set (lib/inbox/apply_many.ts): the effects in
 * one statement, the inbox rows in one insert; and whatever the set cannot
 * take goes the message-at-a-time way, with nothing applied twice.
 */
import assert from "node:assert/strict";
import type { ServiceTx } from "../../lib/db/service.ts";
import {
  type ApplyMany,
  inStatement,
  receiveBatch,
} from "../../lib/inbox/mod.ts";
import { type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import { withTestDatabase } from "./_db.ts";
import { count, createSandbox, createTestServices } from "./_messaging.ts";

const RECEIVER = "t_recv_a";
const options = { replayHorizonDays: 30 };

/** One message at a time: a job, answered without the set's mark. */
function applyOne(tx: ServiceTx, envelope: Envelope) {
  return inStatement(
    tx,
    tx.sql`
      insert into t_recv_a.jobs (order_id, tenant_id, message_id)
      values (${envelope.messageId}, ${envelope.tenantId}, ${envelope.messageId})`,
    { job: envelope.messageId },
  );
}

/**
 * The same jobs as one set, answered with `set: true` so that a test can
 * tell which way a message went. `skip` leaves one message's answer out.
 */
function applyMany(skip?: string): ApplyMany {
  return ({ sql }, envelopes) => ({
    rows: envelopes.map((e) => ({ order_id: e.messageId })),
    types: { order_id: "uuid" },
    effect: sql`
      insert into t_recv_a.jobs (order_id, tenant_id, message_id)
      select order_id, tenant_id, message_id from batch`,
    answers: sql`
      select message_id,
             jsonb_build_object('job', message_id, 'set', true) as outcome
        from batch where message_id is distinct from ${skip ?? null}::uuid`,
  });
}

function message(
  tenantId: string,
  aggregateId = crypto.randomUUID(),
  aggregateVersion = 1,
): Envelope {
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId,
    aggregateVersion,
    tenantId,
    payload: {},
  });
}

Deno.test("set: a batch of distinct aggregates applies in one statement, each answered and recorded once", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const batch = Array.from({ length: 5 }, () => message(tenantId));
    const answers = await receiveBatch(db.sql, RECEIVER, batch, applyOne, {
      ...options,
      applyMany: applyMany(),
    });
    assert.deepEqual(
      answers.map((a) => [a.messageId, a.status, a.duplicate, a.body.set]),
      batch.map((m) => [m.messageId, 200, false, true]),
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 5);
    const inbox = await db.sql<{ message_id: string; outcome: unknown }[]>`
      select message_id, outcome from t_recv_a.inbox where status = 200`;
    assert.equal(inbox.length, 5);
    for (const row of inbox) {
      assert.deepEqual(row.outcome, { job: row.message_id, set: true });
    }
    // The batch again: every message a repeat, answered as first.
    const again = await receiveBatch(db.sql, RECEIVER, batch, applyOne, {
      ...options,
      applyMany: applyMany(),
    });
    assert.deepEqual(
      again.map((a) => [a.status, a.duplicate, a.body.set]),
      batch.map(() => [200, true, true]),
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 5);
  });
});

Deno.test("set: a repeat within the batch sends it the long way, and nothing applies twice", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const first = message(tenantId);
    await receiveBatch(db.sql, RECEIVER, [first], applyOne, options);
    const batch = [message(tenantId), first, message(tenantId)];
    const answers = await receiveBatch(db.sql, RECEIVER, batch, applyOne, {
      ...options,
      applyMany: applyMany(),
    });
    // The set failed on the repeat's inbox row and was rolled back: each
    // message was judged on its own.
    assert.deepEqual(
      answers.map((a) => [a.status, a.duplicate, a.body.set]),
      [[200, false, undefined], [200, true, undefined], [
        200,
        false,
        undefined,
      ]],
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 3);
    assert.equal(await count(db.sql, "t_recv_a.inbox"), 3);
  });
});

Deno.test("set: a message left without its answer rolls the whole set back", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const batch = Array.from({ length: 3 }, () => message(tenantId));
    const answers = await receiveBatch(db.sql, RECEIVER, batch, applyOne, {
      ...options,
      applyMany: applyMany(batch[1].messageId),
    });
    // Its effect must not stay without an inbox row: the set went back,
    // and every message was applied once, the long way.
    assert.deepEqual(
      answers.map((a) => [a.status, a.body.set]),
      batch.map(() => [200, undefined]),
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 3);
    assert.equal(await count(db.sql, "t_recv_a.inbox"), 3);
  });
});

Deno.test("set: two messages of one aggregate, or a receiver that declines, go one at a time", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const order = crypto.randomUUID();
    const same = [message(tenantId, order, 1), message(tenantId, order, 2)];
    const one = await receiveBatch(db.sql, RECEIVER, same, applyOne, {
      ...options,
      applyMany: applyMany(),
    });
    assert.deepEqual(one.map((a) => a.body.set), [undefined, undefined]);
    const declined = [message(tenantId), message(tenantId)];
    const two = await receiveBatch(db.sql, RECEIVER, declined, applyOne, {
      ...options,
      applyMany: () => undefined,
    });
    assert.deepEqual(two.map((a) => [a.status, a.body.set]), [
      [200, undefined],
      [200, undefined],
    ]);
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 4);
  });
});

Deno.test("set: a message older than what the inbox applied of its aggregate is noted as out of order", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const order = crypto.randomUUID();
    await receiveBatch(
      db.sql,
      RECEIVER,
      [message(tenantId, order, 3)],
      applyOne,
      options,
    );
    const late = message(tenantId, order, 2);
    const answers = await receiveBatch(
      db.sql,
      RECEIVER,
      [late, message(tenantId)],
      applyOne,
      { ...options, applyMany: applyMany() },
    );
    assert.deepEqual(answers.map((a) => a.body.set), [true, true]);
    const noted = await db.sql<
      { message_id: string; arrived_version: number; applied_version: number }[]
    >`
      select message_id, arrived_version, applied_version
        from t_recv_a.order_violations`;
    assert.deepEqual(noted.map((n) => ({ ...n })), [{
      message_id: late.messageId,
      arrived_version: 2,
      applied_version: 3,
    }]);
  });
});
