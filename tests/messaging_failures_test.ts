/**
 * A receiver that fails, without a transport in between: it rolls back
 * inside its own transaction, or says "not yet". What the transports do
 * with a receiver that fails (retries, a lost acknowledgement, refusals,
 * the replay horizon) is the conformance suite's
 * (tests/messaging_conformance_test.ts).
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
import { asService } from "../lib/db/service.ts";
import { NotYet, receive } from "../lib/inbox/mod.ts";

Deno.test("receiver rolls back after receive: no inbox row, no job", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(sandboxId, "O1");
    await assert.rejects(
      () =>
        asService(sql, "t_recv_a", { sandboxId }, async (tx) => {
          const result = await receive(
            tx,
            envelope,
            receiverApply("t_recv_a"),
            {
              replayHorizonDays: 30,
            },
          );
          assert.equal(result.status, 200);
          assert.equal(result.duplicate, false);
          // Inside the transaction both rows exist ...
          const [{ n }] = await tx.sql<{ n: number }[]>`
            select (select count(*) from t_recv_a.inbox)
                 + (select count(*) from t_recv_a.jobs) as n`;
          assert.equal(Number(n), 2);
          throw new Error("crash before the receiver commits");
        }),
      /crash before the receiver commits/,
    );
    // ... and neither survives the rollback.
    assert.equal(await count(sql, "t_recv_a.inbox"), 0);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
    assert.equal(await count(sql, "t_recv_a.refusals"), 0);

    // So the same message is applied when it comes again.
    const again = await asService(
      sql,
      "t_recv_a",
      { sandboxId },
      (tx) =>
        receive(tx, envelope, receiverApply("t_recv_a"), {
          replayHorizonDays: 30,
        }),
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
    const sandboxId = await createSandbox(sql);
    const envelope = orderPlacedEnvelope(sandboxId, "O1");
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
