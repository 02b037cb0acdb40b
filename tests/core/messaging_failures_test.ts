/**
 * A receiver that fails, without a transport in between: it rolls back
 * inside its own transaction, or says "not yet". What the transports do
 * with a receiver that fails (retries, a lost acknowledgement, refusals,
 * the replay horizon) is the conformance suite's
 * (tests/core/messaging_conformance_test.ts).
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  receiverApply,
  SUBSCRIBERS,
  testDispatcher,
} from "./_messaging.ts";
import type { ServiceTx } from "../../lib/db/service.ts";
import { type Apply, NotYet, receiveOnce } from "../../lib/inbox/mod.ts";

/** Rows of `table` as a transaction sees them. */
async function countIn({ sql }: ServiceTx, table: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from ${sql(table)}`;
  return n;
}

Deno.test("receiver rolls back after its effect: no inbox row, no job", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    const crashing: Apply = async (tx, e) => {
      await receiverApply("t_recv_a")(tx, e);
      // Inside the transaction the job exists ...
      assert.equal(await countIn(tx, "t_recv_a.jobs"), 1);
      throw new Error("crash before the receiver commits");
    };
    await assert.rejects(
      () =>
        receiveOnce(sql, "t_recv_a", envelope, crashing, {
          replayHorizonDays: 30,
        }),
      /crash before the receiver commits/,
    );
    // ... and neither survives the rollback.
    assert.equal(await count(sql, "t_recv_a.inbox"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
    assert.equal(await count(sql, "t_recv_a.refusals"), 0);

    // So the same message is applied when it comes again.
    const again = await receiveOnce(
      sql,
      "t_recv_a",
      envelope,
      receiverApply("t_recv_a"),
      { replayHorizonDays: 30 },
    );
    assert.deepEqual(again, {
      status: 200,
      body: { job: "O1" },
      duplicate: false,
    });
    assert.equal(await count(sql, "t_recv_a.jobs"), 1);
  });
});

Deno.test("receiver says not yet (409): nothing recorded, the answer tells the consumer to retry", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(tenantId, "O1");
    const dispatcher = testDispatcher(sql, {
      apply: {
        t_recv_a: async (tx, e) => {
          await receiverApply("t_recv_a")(tx, e);
          throw new NotYet("the card does not exist yet");
        },
      },
    });
    const response = await dispatcher.send(
      new Request(SUBSCRIBERS.t_recv_a.url, {
        method: "POST",
        body: JSON.stringify(envelope),
      }),
    );
    assert.equal(response.status, 409);
    assert.deepEqual(await response.json(), {
      reason: "the card does not exist yet",
    });
    assert.equal(await count(sql, "t_recv_a.inbox"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
  });
});
