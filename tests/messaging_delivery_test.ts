import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  RECEIVERS,
  SENDER,
  startTestWorkers,
  waitFor,
} from "./_messaging.ts";

Deno.test("failure before the sender commits: no order, no pending message", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    await assert.rejects(
      () => placeOrder(sql, sandbox, "O1", { failBeforeCommit: true }),
      /failure before commit/,
    );
    assert.equal(await count(sql, "t_sender.orders"), 0);
    assert.equal(await count(sql, `${SENDER}.outbox`), 0);
  });
});

Deno.test("commit, then no relay: one order, one pending message, no job; a relay started later delivers it", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandbox = await createSandbox(sql);
    const envelope = await placeOrder(sql, sandbox, "O1");
    assert.equal(await count(sql, "t_sender.orders"), 1);
    const [row] = await sql`select state, envelope from t_sender.outbox`;
    assert.equal(row.state, "pending");
    assert.deepEqual(row.envelope, envelope);
    for (const r of RECEIVERS) assert.equal(await count(sql, `${r}.jobs`), 0);

    const { messaging } = startTestWorkers(db);
    const m = await messaging;
    try {
      await waitFor("every receiver's job", async () => {
        for (const r of RECEIVERS) {
          if (await count(sql, `${r}.jobs`) !== 1) return false;
        }
        return true;
      });
      await waitFor(
        "deliveries done",
        async () =>
          await count(sql, "queue.deliveries", sql`state = 'done'`) === 3,
      );
      const [published] = await sql`select state from t_sender.outbox`;
      assert.equal(published.state, "published");
      for (const r of RECEIVERS) {
        const [job] = await sql`select message_id from ${sql(r + ".jobs")}`;
        assert.equal(job.message_id, envelope.messageId);
        assert.equal(await count(sql, `${r}.inbox`), 1);
      }
    } finally {
      await m.stop();
    }
  });
});
