/**
 * A receiver's batch: several messages in one transaction, each in a
 * savepoint with its inbox row, each with its own answer.
 */
import assert from "node:assert/strict";
import type { ServiceTx } from "../../lib/db/service.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import {
  inboxBatchHandler,
  inStatement,
  NotYet,
  receiveBatch,
  Refused,
} from "../../lib/inbox/mod.ts";
import { type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import { withTestDatabase } from "./_db.ts";
import { count, createSandbox, createTestServices } from "./_messaging.ts";

const RECEIVER = "t_recv_a";

/**
 * The test receiver's job, unless the payload says otherwise: `refuse`
 * (Refused, 422), `notYet` (NotYet, 409) or `fail` (an error, 500).
 */
async function apply(tx: ServiceTx, envelope: Envelope) {
  const { behave } = envelope.payload as { behave?: string };
  await tx.sql`
    insert into t_recv_a.jobs (order_id, tenant_id, message_id)
    values (${envelope.messageId}, ${envelope.tenantId}, ${envelope.messageId})`;
  if (behave === "refuse") throw new Refused("this order contradicts itself");
  if (behave === "notYet") throw new NotYet("the card is not there yet");
  if (behave === "fail") throw new Error("the oven is on fire");
  return { job: envelope.messageId };
}

function message(
  tenantId: string,
  behave?: string,
  aggregateId = crypto.randomUUID(),
  aggregateVersion = 1,
): Envelope {
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId,
    aggregateVersion,
    tenantId: tenantId,
    payload: { behave },
  });
}

const options = { replayHorizonDays: 30 };

Deno.test("batch: refused, not yet and applied messages each get their own answer, in one commit; the same batch again changes nothing", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const blocked = crypto.randomUUID();
    const batch = [
      message(tenantId),
      message(tenantId, "refuse"),
      message(tenantId, "notYet", blocked, 1),
      message(tenantId),
      // Of the aggregate held back above: it must not overtake.
      message(tenantId, undefined, blocked, 2),
      message(tenantId, "fail"),
      message(tenantId),
    ];
    const answers = await receiveBatch(
      db.sql,
      RECEIVER,
      batch,
      apply,
      options,
    );
    assert.deepEqual(
      answers.map((a) => [a.messageId, a.status, a.duplicate]),
      [
        [batch[0].messageId, 200, false],
        [batch[1].messageId, 422, false],
        [batch[2].messageId, 409, false],
        [batch[3].messageId, 200, false],
        [batch[4].messageId, 409, false],
        [batch[5].messageId, 500, false],
        [batch[6].messageId, 200, false],
      ],
    );
    assert.match(String(answers[1].body.reason), /contradicts/);
    assert.match(String(answers[4].body.reason), /earlier in this batch/);
    // The effects of the applied three only; the refusal is recorded.
    const jobs = await db.sql<{ message_id: string }[]>`
      select message_id from t_recv_a.jobs order by applied_at, message_id`;
    assert.deepEqual(
      new Set(jobs.map((j) => j.message_id)),
      new Set([batch[0], batch[3], batch[6]].map((m) => m.messageId)),
    );
    const inbox = await db.sql<{ message_id: string; status: number }[]>`
      select message_id, status from t_recv_a.inbox`;
    assert.deepEqual(
      new Map(inbox.map((r) => [r.message_id, r.status])),
      new Map([
        [batch[0].messageId, 200],
        [batch[1].messageId, 422],
        [batch[3].messageId, 200],
        [batch[6].messageId, 200],
      ]),
    );
    assert.equal(await count(db.sql, "t_recv_a.refusals"), 1);
    // One transaction: now(), the jobs' default, is its start time.
    const [{ n: starts }] = await db.sql<{ n: number }[]>`
      select count(distinct applied_at)::int as n from t_recv_a.jobs`;
    assert.equal(starts, 1);

    // The same batch again: what was answered is answered the same, and
    // nothing more is applied; the held-back ones are tried again.
    const again = await receiveBatch(db.sql, RECEIVER, batch, apply, options);
    assert.deepEqual(
      again.map((a) => [a.status, a.duplicate]),
      [
        [200, true],
        [422, true],
        [409, false],
        [200, true],
        [409, false],
        [500, false],
        [200, true],
      ],
    );
    assert.deepEqual(again[0].body, answers[0].body);
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 3);
    assert.equal(await count(db.sql, "t_recv_a.refusals"), 1);
  });
});

/**
 * The same job, given as one unsent statement: the batch sends these
 * without waiting between messages. `refuse` throws before anything is
 * sent; `break` makes the statement itself fail (a null key).
 */
function applyAsStatement(tx: ServiceTx, envelope: Envelope) {
  const { behave } = envelope.payload as { behave?: string };
  if (behave === "refuse") throw new Refused("this order contradicts itself");
  const orderId = behave === "break" ? null : envelope.messageId;
  return inStatement(
    tx,
    tx.sql`
      insert into t_recv_a.jobs (order_id, tenant_id, message_id)
      values (${orderId}, ${envelope.tenantId}, ${envelope.messageId})
      returning order_id`,
    { job: envelope.messageId },
  );
}

Deno.test("batch of statements: a repeat, a failed statement and a refusal mid-batch each get their own answer, and the rest commit once", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const first = message(tenantId);
    const [applied] = await receiveBatch(
      db.sql,
      RECEIVER,
      [first],
      applyAsStatement,
      options,
    );
    assert.equal(applied.status, 200);
    const broken = crypto.randomUUID();
    const batch = [
      message(tenantId),
      first, // a repeat: its inbox row fails the statement, in mid-flight
      message(tenantId),
      message(tenantId, "break", broken, 1),
      message(tenantId, undefined, broken, 2),
      message(tenantId, "refuse"),
      message(tenantId),
    ];
    const answers = await receiveBatch(
      db.sql,
      RECEIVER,
      batch,
      applyAsStatement,
      options,
    );
    assert.deepEqual(
      answers.map((a) => [a.messageId, a.status, a.duplicate]),
      [
        [batch[0].messageId, 200, false],
        [first.messageId, 200, true],
        [batch[2].messageId, 200, false],
        [batch[3].messageId, 500, false],
        [batch[4].messageId, 409, false],
        [batch[5].messageId, 422, false],
        [batch[6].messageId, 200, false],
      ],
    );
    assert.deepEqual(answers[1].body, applied.body);
    assert.match(String(answers[3].body.error), /null value/);
    const jobs = await db.sql<{ message_id: string }[]>`
      select message_id from t_recv_a.jobs`;
    assert.deepEqual(
      new Set(jobs.map((j) => j.message_id)),
      new Set([first, batch[0], batch[2], batch[6]].map((m) => m.messageId)),
    );
    const [{ n: starts }] = await db.sql<{ n: number }[]>`
      select count(distinct applied_at)::int as n from t_recv_a.jobs
       where message_id <> ${first.messageId}`;
    assert.equal(starts, 1);
    const [repeat] = await db.sql<{ repeats: number }[]>`
      select repeats from t_recv_a.inbox where message_id = ${first.messageId}`;
    assert.equal(repeat.repeats, 1);
    assert.equal(await count(db.sql, "t_recv_a.refusals"), 1);
    assert.equal(await count(db.sql, "t_recv_a.inbox"), 5);
  });
});

Deno.test("batches of the same messages at once (a delivery sent twice): each message applied once, each batch answered", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    // Reads before its effect, as the kitchen does: the batch waits for
    // each message's read, while the inbox rows sent before it may fail.
    const readFirst = async (tx: ServiceTx, e: Envelope) => {
      await tx.sql`select count(*) from t_recv_a.jobs`;
      return inStatement(
        tx,
        tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
          values (${e.messageId}, ${e.tenantId}, ${e.messageId})`,
        { job: e.messageId },
      );
    };
    const batches: Envelope[][] = [];
    for (let round = 0; round < 8; round++) {
      const batch = Array.from({ length: 10 }, () => message(tenantId));
      batches.push(batch);
      // The second copy starts a few messages in, so that the two meet
      // at different places of the batch from round to round.
      const [whole, tail] = await Promise.all([
        receiveBatch(db.sql, RECEIVER, batch, readFirst, options),
        receiveBatch(db.sql, RECEIVER, batch.slice(round), readFirst, options),
      ]);
      for (const answers of [whole, tail]) {
        assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
      }
      // Each message was new to exactly one of the two.
      for (const e of batch.slice(round)) {
        const firsts = [whole, tail].flat().filter((a) =>
          a.messageId === e.messageId && !a.duplicate
        );
        assert.equal(firsts.length, 1, `message ${e.messageId}`);
      }
    }
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 80);
    assert.equal(await count(db.sql, "t_recv_a.inbox"), 80);
  });
});

Deno.test("batch endpoint: a lost answer is answered from the inbox when the batch comes again; bad input is refused before anything is applied", async () => {
  await withTestDatabase(async (db) => {
    await createTestServices(db.sql);
    const tenantId = await createSandbox(db.sql);
    const handler = inboxBatchHandler({
      sql: db.sql,
      service: RECEIVER,
      label: "Receiver A",
      apply,
      replayHorizonDays: 30,
      log: memoryLogger("error").logger,
    });
    const post = (body: unknown) =>
      handler(
        new Request("http://receivers.test/t_recv_a/batch", {
          method: "POST",
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
      );
    const batch = [message(tenantId), message(tenantId), message(tenantId)];
    // The first answer is dropped, as a connection cut after the commit.
    const lost = await post({ messages: batch });
    assert.equal(lost.status, 200);
    await lost.body?.cancel();
    const retry = await post({ messages: batch });
    assert.equal(retry.status, 200);
    const { results } = await retry.json();
    assert.deepEqual(
      results.map((r: { status: number; body: { duplicate: boolean } }) => [
        r.status,
        r.body.duplicate,
      ]),
      [[200, true], [200, true], [200, true]],
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 3);

    // A message that is not an envelope gets its own 400; the rest apply.
    const fresh = message(tenantId);
    const mixed = await post({
      messages: [fresh, { messageId: "not-a-uuid" }],
    });
    const mixedBody = await mixed.json();
    assert.deepEqual(
      mixedBody.results.map((r: { status: number }) => r.status),
      [200, 400],
    );
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 4);

    // Not a batch, two tenants, too many: refused whole, nothing applied.
    assert.equal((await post("{")).status, 400);
    assert.equal((await post({ messages: [] })).status, 400);
    const other = await createSandbox(db.sql, "other");
    const twoTenants = await post({
      messages: [message(tenantId), message(other)],
    });
    assert.equal(twoTenants.status, 400);
    await twoTenants.body?.cancel();
    const tooMany = await post({
      messages: Array.from({ length: 101 }, () => message(tenantId)),
    });
    assert.equal(tooMany.status, 413);
    await tooMany.body?.cancel();
    assert.equal(await count(db.sql, "t_recv_a.jobs"), 4);
  });
});
