/**
 * The receiver's own transaction (receiveOnce): the effect first, then the
 * inbox row with its answer. A repeat, a refusal, a "not yet", a message
 * beyond the replay horizon and two concurrent deliveries of one message
 * must end exactly as with the inbox row written first.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  receiverApply,
} from "./_messaging.ts";
import {
  type Apply,
  inStatement,
  NotYet,
  receiveOnce,
  Refused,
} from "../../lib/inbox/mod.ts";

const OPTIONS = { replayHorizonDays: 30 };
const R = "t_recv_a";

Deno.test("receiveOnce: applied once; a repeat gets the first answer and its own effect is rolled back", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    let calls = 0;
    // Each call writes a job row of its own; only the first may survive.
    const apply: Apply = async (tx, e) => {
      calls++;
      await tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
        values (${"O1-" + calls}, ${e.tenantId}, ${e.messageId})`;
      return { call: calls };
    };
    const first = await receiveOnce(sql, R, envelope, apply, OPTIONS);
    assert.deepEqual(first, {
      status: 200,
      body: { call: 1 },
      duplicate: false,
    });
    const again = await receiveOnce(sql, R, envelope, apply, OPTIONS);
    assert.deepEqual(again, {
      status: 200,
      body: { call: 1 },
      duplicate: true,
    });
    assert.equal(calls, 2);
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
    assert.equal(await count(sql, "t_recv_a.inbox"), 1);
    assert.equal(await count(sql, "t_recv_a.refusals"), 0);
  });
});

Deno.test("receiveOnce: a refusal rolls the effect back and is recorded once, with 422 on every repeat", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    const apply: Apply = async (tx, e) => {
      await receiverApply(R)(tx, e);
      throw new Refused("contradicts what the receiver holds");
    };
    const expected = { reason: "contradicts what the receiver holds" };
    const first = await receiveOnce(sql, R, envelope, apply, OPTIONS);
    assert.deepEqual(first, { status: 422, body: expected, duplicate: false });
    const again = await receiveOnce(sql, R, envelope, apply, OPTIONS);
    assert.deepEqual(again, { status: 422, body: expected, duplicate: true });
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
    assert.equal(await count(sql, "t_recv_a.refusals"), 1);
    const [row] = await sql<{ status: number; outcome: unknown }[]>`
      select status, outcome from t_recv_a.inbox`;
    assert.deepEqual(row, { status: 422, outcome: expected });
  });
});

Deno.test("receiveOnce: a repeat whose effect now refuses or says not yet still gets the first answer", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    // The test receiver refuses a second job for an order, as a repeat of
    // the first message would find it.
    const first = await receiveOnce(
      sql,
      R,
      envelope,
      receiverApply(R),
      OPTIONS,
    );
    assert.deepEqual(first.body, { job: "O1" });
    const refused = await receiveOnce(
      sql,
      R,
      envelope,
      receiverApply(R),
      OPTIONS,
    );
    assert.deepEqual(refused, { ...first, duplicate: true });
    const notYet = await receiveOnce(sql, R, envelope, () => {
      throw new NotYet("not yet");
    }, OPTIONS);
    assert.deepEqual(notYet, { ...first, duplicate: true });
    assert.equal(await count(sql, "t_recv_a.refusals"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
  });
});

Deno.test("receiveOnce: not yet and errors record nothing and are rethrown", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    await assert.rejects(
      () =>
        receiveOnce(sql, R, envelope, async (tx, e) => {
          await receiverApply(R)(tx, e);
          throw new NotYet("no card yet");
        }, OPTIONS),
      NotYet,
    );
    await assert.rejects(
      () =>
        receiveOnce(sql, R, envelope, async (tx, e) => {
          await receiverApply(R)(tx, e);
          throw new Error("disk on fire");
        }, OPTIONS),
      /disk on fire/,
    );
    assert.equal(await count(sql, "t_recv_a.inbox"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
    const later = await receiveOnce(
      sql,
      R,
      envelope,
      receiverApply(R),
      OPTIONS,
    );
    assert.deepEqual(later, {
      status: 200,
      body: { job: "O1" },
      duplicate: false,
    });
  });
});

Deno.test("receiveOnce: beyond the replay horizon refused without applying, unless seen before", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const old = orderPlacedEnvelope(tenantId, "O1");
    old.occurredAt = new Date(Date.now() - 31 * 86_400_000).toISOString();
    const refused = await receiveOnce(sql, R, old, receiverApply(R), OPTIONS);
    assert.equal(refused.status, 422);
    assert.match(String(refused.body.reason), /replay horizon of 30 days/);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
    assert.equal(await count(sql, "t_recv_a.refusals"), 1);

    // Applied while young, repeated when old: the first answer.
    const young = orderPlacedEnvelope(tenantId, "O2");
    const first = await receiveOnce(sql, R, young, receiverApply(R), OPTIONS);
    young.occurredAt = old.occurredAt;
    const again = await receiveOnce(sql, R, young, receiverApply(R), OPTIONS);
    assert.deepEqual(again, { ...first, duplicate: true });
    assert.equal(await count(sql, "t_recv_a.refusals"), 1);
  });
});

Deno.test("receiveOnce: concurrent deliveries of one message apply it once", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    for (let i = 0; i < 20; i++) {
      const envelope = orderPlacedEnvelope(tenantId, `O${i}`);
      const answers = await Promise.all(
        [1, 2, 3].map(() =>
          receiveOnce(sql, R, envelope, receiverApply(R), OPTIONS)
        ),
      );
      assert.equal(answers.filter((a) => !a.duplicate).length, 1);
      for (const a of answers) {
        assert.deepEqual(a.body, { job: `O${i}` });
        assert.equal(a.status, 200);
      }
    }
    assert.equal(await count(sql, "t_recv_a.jobs"), 20);
    assert.equal(await count(sql, "t_recv_a.inbox"), 20);
    assert.equal(await count(sql, "t_recv_a.refusals"), 0);
  });
});

/**
 * An effect given as one statement: a job for the message's order unless
 * the order has one, answered by what the statement changed.
 */
const jobInStatement: Apply = (tx, e) =>
  inStatement(
    tx,
    tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
      values (${e.aggregateId}, ${e.tenantId}, ${e.messageId})
      on conflict (order_id) do nothing
      returning order_id`,
    tx.sql`jsonb_build_object('job', (select order_id from effect))`,
    { ignored: "the order has its job" },
  );

Deno.test("receiveOnce: an effect given as a statement is applied once and answered by what it changed", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const first = orderPlacedEnvelope(tenantId, "O1");
    assert.deepEqual(
      await receiveOnce(sql, R, first, jobInStatement, OPTIONS),
      {
        status: 200,
        body: { job: "O1" },
        duplicate: false,
      },
    );
    // The same message again: the stored answer, and no second job.
    assert.deepEqual(
      await receiveOnce(sql, R, first, jobInStatement, OPTIONS),
      {
        status: 200,
        body: { job: "O1" },
        duplicate: true,
      },
    );
    // Another message for the same order: the statement changes nothing,
    // and the answer says so.
    const second = orderPlacedEnvelope(tenantId, "O1");
    assert.deepEqual(
      await receiveOnce(sql, R, second, jobInStatement, OPTIONS),
      {
        status: 200,
        body: { ignored: "the order has its job" },
        duplicate: false,
      },
    );
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
    assert.equal(await count(sql, "t_recv_a.inbox"), 2);
    const rows = await sql<{ message_id: string; outcome: unknown }[]>`
      select message_id, outcome from t_recv_a.inbox order by received_at`;
    assert.deepEqual(rows.map((r) => r.outcome), [
      { job: "O1" },
      { ignored: "the order has its job" },
    ]);
  });
});

Deno.test("receiveOnce: an effect given as a statement that fails throws its own error and records nothing", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    // A job without an order id breaks the table's NOT NULL.
    const broken: Apply = (tx, e) =>
      inStatement(
        tx,
        tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
          values (null, ${e.tenantId}, ${e.messageId})`,
        { job: "never" },
      );
    await assert.rejects(
      () => receiveOnce(sql, R, envelope, broken, OPTIONS),
      (error: { code?: string }) => error.code === "23502",
    );
    assert.equal(await count(sql, "t_recv_a.inbox"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
  });
});
Deno.test("repeats answered from the inbox are counted on its row, on every path that answers one", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const repeatsOf = async (messageId: string) => {
      const [row] = await sql<{ repeats: number }[]>`
        select repeats from t_recv_a.inbox where message_id = ${messageId}`;
      return row.repeats;
    };
    // receiveOnce: the first delivery is no repeat; each later one is,
    // whether its effect applies again, refuses or says not yet.
    const applied = orderPlacedEnvelope(tenantId, "O1");
    await receiveOnce(sql, R, applied, receiverApply(R), OPTIONS);
    assert.equal(await repeatsOf(applied.messageId), 0);
    await receiveOnce(sql, R, applied, receiverApply(R), OPTIONS);
    await receiveOnce(sql, R, applied, () => {
      throw new NotYet("not yet");
    }, OPTIONS);
    assert.equal(await repeatsOf(applied.messageId), 2);

    // A refusal, then its repeat.
    const refused = orderPlacedEnvelope(tenantId, "O2");
    const refuse: Apply = () => {
      throw new Refused("no");
    };
    await receiveOnce(sql, R, refused, refuse, OPTIONS);
    assert.equal(await repeatsOf(refused.messageId), 0);
    await receiveOnce(sql, R, refused, refuse, OPTIONS);
    assert.equal(await repeatsOf(refused.messageId), 1);

    // An effect given as a statement, three times.
    const inStatementOnce = orderPlacedEnvelope(tenantId, "O3");
    for (let i = 0; i < 3; i++) {
      await receiveOnce(sql, R, inStatementOnce, jobInStatement, OPTIONS);
    }
    assert.equal(await repeatsOf(inStatementOnce.messageId), 2);
  });
});
