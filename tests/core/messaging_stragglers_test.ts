/**
 * A delivery still running when its batch is recorded (a straggler, past
 * the fair share's stragglerMs) finishes on its own: recorded done after
 * its one attempt, never left leased until its lease runs out.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../lib/db/connect.ts";
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
  waitFor,
  waitForDeliveries,
  withWorkers,
} from "./_messaging.ts";

/**
 * Runs `fn` with the test workers, t_recv_b answering after `slowMs`, and
 * then checks that every delivery took one attempt.
 */
async function withSlowReceiver(
  settings: { slowMs: number; stragglerMs: number; timeoutMs?: number },
  orders: string[],
  fn: (
    sql: Sql,
    lines: Record<string, unknown>[],
  ) => Promise<void>,
) {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    await setFault(sql, tenantId, receiverFault("t_recv_b", "Slow"), true);
    await withWorkers(db, {
      dispatcher: testDispatcher(sql, { slowMs: settings.slowMs }),
      fairShare: { stragglerMs: settings.stragglerMs },
      ...settings.timeoutMs ? { timeoutMs: settings.timeoutMs } : {},
    }, async ({ lines }) => {
      await placeOrders(sql, tenantId, orders);
      await fn(sql, lines);
    });
    assert.equal(
      await count(sql, "queue.deliveries", sql`attempts = 1`),
      orders.length * RECEIVERS.length,
    );
  });
}

// One receiver answers in 600 ms, well past the 100 ms a batch waits and
// well within the 2 s timeout and the 10 s lease.
Deno.test("stragglers are recorded on their own, after one attempt each", async () => {
  await withSlowReceiver(
    { slowMs: 600, stragglerMs: 100 },
    ["O1", "O2", "O3", "O4", "O5"],
    async (sql, lines) => {
      // Within half the lease: a straggler left unrecorded would wait for
      // its lease to run out and be sent again.
      await waitForDeliveries(sql, "done", 5 * RECEIVERS.length, 5_000);
      assert.deepEqual(lines.filter((l) => l.event === "lease_lost"), []);
      assert.equal(
        await count(sql, "queue.attempt_log"),
        5 * RECEIVERS.length,
      );
      assert.equal(await count(sql, "t_recv_b.jobs"), 5);
    },
  );
});

// Fails when a batch's stragglers are recorded all at once: the quick
// receivers' deliveries, left behind with the slow one's, stayed leased
// until the slow one answered, and held their tenant's share meanwhile.
// A batch waits 1 ms, so every request of it is left as a straggler;
// t_recv_b answers after 4 s.
Deno.test("a quick receiver's stragglers are recorded before a slow one answers", async () => {
  await withSlowReceiver(
    { slowMs: 4_000, stragglerMs: 1, timeoutMs: 8_000 },
    ["O1", "O2", "O3"],
    async (sql) => {
      const done = (receiver: string) =>
        count(
          sql,
          "queue.deliveries",
          sql`state = 'done' and subscriber = ${receiver}`,
        );
      await waitFor(
        "the quick receivers' deliveries done",
        async () =>
          await done("t_recv_a") === 3 && await done("t_recv_c") === 3,
        2_500,
      );
      assert.equal(await done("t_recv_b"), 0, "the slow one answered early");
      await waitForDeliveries(sql, "done", 3 * RECEIVERS.length, 10_000);
    },
  );
});
