/**
 * The inbox's order watch (receiveOnce): a message of an aggregate that
 * arrives after a later version of it was applied is noted, in the
 * receiver's transaction, once; in order, a repeat, another aggregate or
 * another sandbox note nothing. Every inbox has the watch: receiveOnce
 * always writes it.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
} from "./_messaging.ts";
import {
  type Apply,
  inStatement,
  receiveOnce,
  Refused,
} from "../../lib/inbox/mod.ts";
import type { Envelope } from "../../lib/outbox/envelope.ts";
import type { Sql } from "../../lib/db/connect.ts";

const OPTIONS = { replayHorizonDays: 30 };
const R = "t_recv_a";

/** An effect that changes nothing and answers `{}`. */
const nothing: Apply = () => ({});

function version(e: Envelope, v: number): Envelope {
  return { ...e, messageId: crypto.randomUUID(), aggregateVersion: v };
}

async function violations(sql: Sql) {
  const rows = await sql<
    {
      message_id: string;
      aggregate_id: string;
      arrived_version: number;
      applied_version: number;
      type: string;
    }[]
  >`select message_id, aggregate_id, arrived_version, applied_version, type
      from t_recv_a.order_violations order by id`;
  return [...rows];
}

Deno.test("order watch: a version that arrives after a later one was applied is noted once", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const v1 = orderPlacedEnvelope(tenantId, "O1");
    const v2 = version(v1, 2);
    const v3 = version(v1, 3);

    // In order: nothing to note.
    await receiveOnce(sql, R, v1, nothing, OPTIONS);
    await receiveOnce(sql, R, v3, nothing, OPTIONS);
    assert.deepEqual(await violations(sql), []);

    // v2 after v3: noted with both versions.
    const late = await receiveOnce(sql, R, v2, nothing, OPTIONS);
    assert.equal(late.status, 200);
    assert.deepEqual(await violations(sql), [{
      message_id: v2.messageId,
      aggregate_id: "O1",
      arrived_version: 2,
      applied_version: 3,
      type: "OrderPlaced",
    }]);

    // A repeat of the late message is a duplicate: rolled back, not noted again.
    const again = await receiveOnce(sql, R, v2, nothing, OPTIONS);
    assert.equal(again.duplicate, true);
    assert.equal((await violations(sql)).length, 1);
    assert.equal(await count(sql, "t_recv_a.inbox"), 3);
  });
});

Deno.test("order watch: other aggregates, other sandboxes and other receivers are apart; an effect given as a statement notes too", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const a = await createSandbox(sql, "a");
    const b = await createSandbox(sql, "b");
    const a2 = version(orderPlacedEnvelope(a, "O1"), 2);
    await receiveOnce(sql, R, a2, nothing, OPTIONS);

    // Version 1 of another aggregate, and of the same id in another sandbox.
    await receiveOnce(sql, R, orderPlacedEnvelope(a, "O2"), nothing, OPTIONS);
    await receiveOnce(sql, R, orderPlacedEnvelope(b, "O1"), nothing, OPTIONS);
    // Another receiver has applied nothing of O1.
    await receiveOnce(
      sql,
      "t_recv_b",
      orderPlacedEnvelope(a, "O1"),
      nothing,
      OPTIONS,
    );
    assert.deepEqual(await violations(sql), []);
    assert.equal(await count(sql, "t_recv_b.order_violations"), 0);

    // Version 1 of O1 in sandbox a, with its effect as one statement.
    const late = orderPlacedEnvelope(a, "O1");
    const result = await receiveOnce(
      sql,
      R,
      late,
      (tx, e) =>
        inStatement(
          tx,
          tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
                 values (${e.aggregateId + "-late"}, ${e.tenantId},
                         ${e.messageId}) returning order_id`,
          { job: "late" },
        ),
      OPTIONS,
    );
    assert.deepEqual(result.body, { job: "late" });
    assert.deepEqual((await violations(sql)).map((v) => v.message_id), [
      late.messageId,
    ]);
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
  });
});

Deno.test("order watch: every applied row keeps its aggregate and version; a refused one keeps none", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const applied = version(orderPlacedEnvelope(tenantId, "O1"), 2);
    await receiveOnce(sql, R, applied, nothing, OPTIONS);
    const refused = orderPlacedEnvelope(tenantId, "O2");
    const result = await receiveOnce(sql, R, refused, () => {
      throw new Refused("no such order");
    }, OPTIONS);
    assert.equal(result.status, 422);
    const rows = await sql<
      {
        message_id: string;
        status: number;
        aggregate_id: string | null;
        aggregate_version: number | null;
      }[]
    >`select message_id, status, aggregate_id, aggregate_version
        from t_recv_a.inbox order by status`;
    assert.deepEqual([...rows], [
      {
        message_id: applied.messageId,
        status: 200,
        aggregate_id: "O1",
        aggregate_version: 2,
      },
      {
        message_id: refused.messageId,
        status: 422,
        aggregate_id: null,
        aggregate_version: null,
      },
    ]);
    assert.deepEqual(await violations(sql), []);
  });
});
