/**
 * A corrected copy at the receiver (lib/inbox/supersedes.ts): a copy whose
 * `supersedes` names a message the inbox applied applies nothing, is
 * recorded, and is answered as a repeat; a copy that comes first claims
 * the message it replaces, so that the replaced message, arriving late or
 * at the same time, is the repeat instead. The effect here is one row per
 * message id (as the bakery's customer history is), so a second
 * application would show as a second row.
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
  appliedOf,
  type Apply,
  receiveOnce,
  Refused,
} from "../../lib/inbox/mod.ts";
import { type Envelope, uuidv7 } from "../../lib/outbox/mod.ts";
import type { Sql } from "../../lib/db/connect.ts";

const OPTIONS = { replayHorizonDays: 30 };
const R = "t_recv_a";

/** One effect row per message id, whatever the order. */
const historyRow: Apply = async (tx, e) => {
  await tx.sql`insert into t_recv_a.jobs (order_id, tenant_id, message_id)
    values (${e.messageId}, ${e.tenantId}, ${e.messageId})`;
  return { applied: e.messageId };
};

/** A corrected copy of `e`, standing in for `line` (default: `e` alone). */
function copyOf(e: Envelope, line = [e.messageId]): Envelope {
  return {
    ...e,
    messageId: uuidv7(),
    occurredAt: new Date().toISOString(),
    payload: { ...e.payload, corrected: true },
    supersedes: line,
  };
}

async function inboxRow(sql: Sql, messageId: string) {
  const [row] = await sql<{ status: number; outcome: unknown }[]>`
    select status, outcome from t_recv_a.inbox where message_id = ${messageId}`;
  return row;
}

Deno.test("a copy whose superseded message the inbox applied applies nothing, is recorded, and answers as a repeat", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const original = orderPlacedEnvelope(tenantId, "O1");
    // Applied, and its acknowledgement lost: the sender holds a dead letter.
    await receiveOnce(sql, R, original, historyRow, OPTIONS);
    const copy = copyOf(original);
    const answer = {
      alreadyApplied: original.messageId,
      reason:
        `already applied: ${R} has message ${original.messageId} in its inbox`,
    };
    assert.deepEqual(await receiveOnce(sql, R, copy, historyRow, OPTIONS), {
      status: 200,
      body: answer,
      duplicate: true,
    });
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
    assert.deepEqual(await inboxRow(sql, copy.messageId), {
      status: 200,
      outcome: answer,
    });
    // The copy again is a repeat of the copy: the same answer, still once.
    assert.deepEqual(await receiveOnce(sql, R, copy, historyRow, OPTIONS), {
      status: 200,
      body: answer,
      duplicate: true,
    });
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
    assert.equal(await count(sql, "t_recv_a.inbox"), 2);
    // A copy of an applied message is no order violation: it applied none.
    assert.equal(await count(sql, "t_recv_a.order_violations"), 0);

    // A copy of that copy names the whole line; it applies nothing either.
    const again = copyOf(copy, [original.messageId, copy.messageId]);
    const third = await receiveOnce(sql, R, again, historyRow, OPTIONS);
    assert.equal(third.duplicate, true);
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
  });
});

Deno.test("a copy that comes first claims what it replaces: the replaced message, arriving later, is the repeat", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const original = orderPlacedEnvelope(tenantId, "O1");
    const copy = copyOf(original);
    assert.deepEqual(await receiveOnce(sql, R, copy, historyRow, OPTIONS), {
      status: 200,
      body: { applied: copy.messageId },
      duplicate: false,
    });
    // The original was still on its way (a slow delivery that timed out).
    assert.deepEqual(
      await receiveOnce(sql, R, original, historyRow, OPTIONS),
      {
        status: 200,
        body: { supersededBy: copy.messageId },
        duplicate: true,
      },
    );
    const rows = await sql<{ message_id: string }[]>`
      select message_id from t_recv_a.jobs`;
    assert.deepEqual(rows.map((r) => r.message_id), [copy.messageId]);
  });
});

Deno.test("a copy and the message it replaces at the same time: one effect", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const original = orderPlacedEnvelope(tenantId, "O1");
    const copy = copyOf(original);
    // The original's transaction has applied its effect and not yet
    // written its inbox row when the copy arrives and commits.
    let applied!: () => void;
    const effectDone = new Promise<void>((r) => applied = r);
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const slow: Apply = async (tx, e) => {
      const out = await historyRow(tx, e);
      applied();
      await gate;
      return out;
    };
    const first = receiveOnce(sql, R, original, slow, OPTIONS);
    await effectDone;
    const second = await receiveOnce(sql, R, copy, historyRow, OPTIONS);
    release();
    const late = await first;
    assert.equal(second.duplicate, false);
    assert.deepEqual(late, {
      status: 200,
      body: { supersededBy: copy.messageId },
      duplicate: true,
    });
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
  });
});

Deno.test("a corrected copy of a refused message applies: a refusal applied nothing", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const original = orderPlacedEnvelope(tenantId, "O1");
    const refuse: Apply = () => {
      throw new Refused("malformed: lines.0.qty");
    };
    assert.equal(
      (await receiveOnce(sql, R, original, refuse, OPTIONS)).status,
      422,
    );
    const copy = copyOf(original);
    assert.deepEqual(await receiveOnce(sql, R, copy, historyRow, OPTIONS), {
      status: 200,
      body: { applied: copy.messageId },
      duplicate: false,
    });
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
    // The refusal's row stands as it was.
    assert.deepEqual(await inboxRow(sql, original.messageId), {
      status: 422,
      outcome: { reason: "malformed: lines.0.qty" },
    });
  });
});

Deno.test("appliedOf: the first of the ids that the inbox holds as applied, read as the receiver", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const applied = orderPlacedEnvelope(tenantId, "O1");
    const refused = orderPlacedEnvelope(tenantId, "O2");
    const unseen = orderPlacedEnvelope(tenantId, "O3");
    await receiveOnce(sql, R, applied, historyRow, OPTIONS);
    await receiveOnce(sql, R, refused, () => {
      throw new Refused("no");
    }, OPTIONS);
    const ask = (ids: string[]) => appliedOf(sql, R, tenantId, ids);
    assert.equal(await ask([unseen.messageId]), undefined);
    assert.equal(await ask([refused.messageId]), undefined);
    assert.equal(
      await ask([unseen.messageId, refused.messageId, applied.messageId]),
      applied.messageId,
    );
    // Another sandbox's inbox rows are not this sandbox's to see.
    const other = await createSandbox(sql, "other");
    assert.equal(
      await appliedOf(sql, R, other, [applied.messageId]),
      undefined,
    );
  });
});
