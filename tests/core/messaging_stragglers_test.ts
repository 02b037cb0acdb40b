/**
 * A delivery still running when its batch is recorded (a straggler, past
 * the fair share's stragglerMs) finishes on its own: recorded done after
 * its one attempt, never left leased until its lease runs out.
 */
import assert from "node:assert/strict";
import { setFault } from "../../lib/faults/mod.ts";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrders,
  receiverFault,
  RECEIVERS,
  testDispatcher,
  waitForDeliveries,
  withWorkers,
} from "./_messaging.ts";

Deno.test("stragglers are recorded on their own, after one attempt each", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    // One receiver answers in 600 ms, well past the 100 ms a batch waits
    // and well within the 2 s timeout and the 10 s lease.
    await setFault(sql, sandboxId, receiverFault("t_recv_b", "Slow"), true);
    await withWorkers(db, {
      dispatcher: testDispatcher(sql, { slowMs: 600 }),
      fairShare: { stragglerMs: 100 },
    }, async ({ lines }) => {
      await placeOrders(sql, sandboxId, ["O1", "O2", "O3", "O4", "O5"]);
      // Within half the lease: a straggler left unrecorded would wait for
      // its lease to run out and be sent again.
      await waitForDeliveries(sql, "done", 5 * RECEIVERS.length, 5_000);
      assert.deepEqual(
        lines.filter((l) => l.event === "lease_lost"),
        [],
      );
    });
    assert.equal(
      await count(sql, "queue.deliveries", sql`attempts = 1`),
      5 * RECEIVERS.length,
    );
    assert.equal(await count(sql, "queue.attempt_log"), 5 * RECEIVERS.length);
    assert.equal(await count(sql, "t_recv_b.jobs"), 5);
  });
});
