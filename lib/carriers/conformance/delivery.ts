/**
 * The sender's side of the ledger: a failure before the sender commits
 * leaves nothing to send; a commit with no relay running leaves the
 * message pending, and a relay started later delivers it.
 */
import assert from "node:assert/strict";
import { placeOrder, RECEIVERS, SENDER } from "./services.ts";
import { count, waitFor, waitForDeliveries, waitForJobs } from "./rows.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

const everyOnce = Object.fromEntries(RECEIVERS.map((r) => [r, 1]));

export const deliveryScenarios: Scenario[] = [{
  name:
    "failure before the sender commits: no order, no pending message; the relay publishes only the next order",
  run: async ({ sql, at, tenantId, view, workers }) => {
    await assert.rejects(
      () => placeOrder(sql, tenantId, "O1", { failBeforeCommit: true }),
      /failure before commit/,
    );
    assert.equal(await count(sql, "t_sender.orders"), 0);
    assert.equal(await count(sql, `${SENDER}.outbox`), 0);

    // Workers find nothing of O1 to send: the next order is all they carry.
    await workers({}, async () => {
      const next = await placeOrder(sql, tenantId, "O2");
      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", RECEIVERS.length);
      const messages = await sql`select message_id from queue.messages`;
      assert.deepEqual(messages.map((m) => m.message_id), [next.messageId]);
      for (const r of RECEIVERS) {
        const jobs = await at(r)`select order_id from ${sql(r + ".jobs")}`;
        assert.deepEqual(jobs.map((j) => j.order_id), ["O2"], r);
      }
      if (view) {
        await assertStreamHolds(view, toEach([next.messageId], RECEIVERS));
        await assertDelivered(view, everyOnce);
      }
    });
  },
}, {
  name:
    "commit, then no relay: one order, one pending message, no job; a relay started later delivers it",
  run: async ({ sql, at, tenantId, view, workers }) => {
    const envelope = await placeOrder(sql, tenantId, "O1");
    assert.equal(await count(sql, "t_sender.orders"), 1);
    const [row] = await sql`select state, envelope from t_sender.outbox`;
    assert.equal(row.state, "pending");
    assert.deepEqual(row.envelope, envelope);
    for (const r of RECEIVERS) assert.equal(await count(sql, `${r}.jobs`), 0);
    assert.equal(await count(sql, "queue.deliveries"), 0);
    if (view) assert.equal(await view.count(), 0);

    await workers({}, async () => {
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
      // Published: the queue holds its copy, the outbox nothing.
      assert.equal(await count(sql, "t_sender.outbox"), 0);
      assert.equal(await count(sql, "queue.messages"), 1);
      for (const r of RECEIVERS) {
        const [job] = await at(r)`select message_id from ${sql(r + ".jobs")}`;
        assert.equal(job.message_id, envelope.messageId);
        assert.equal(await count(sql, `${r}.inbox`), 1);
      }
      // Over JetStream the relay published one message per delivery, and
      // each receiver's consumer took its own once.
      if (view) {
        await assertStreamHolds(view, toEach([envelope.messageId], RECEIVERS));
        await assertDelivered(view, everyOnce);
      }
    });
  },
}];
