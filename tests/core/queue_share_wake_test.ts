/**
 * A claim turned away by the fair share (its tenant's lane held in full)
 * goes back to sleep. The consumer whose release makes room must then look
 * again itself: no one else is woken for the rows left behind, and they
 * would wait for the poll (a minute in tests/fairness_test.ts, where this
 * left five receivers' deliveries waiting behind a slow kitchen).
 */
import assert from "node:assert/strict";
import type { Sql } from "../../lib/db/connect.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { FairShare } from "../../lib/delivery/fair_share.ts";
import { consumeOnce } from "../../lib/carriers/postgres/mod.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import type { ConsumerOptions } from "../../lib/carriers/postgres/consumer.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  ROUTING,
  SENDER,
  SUBSCRIBERS,
  testDispatcher,
} from "./_messaging.ts";

const LANE = "t_recv_a";

/** Moves the sender's outbox into the queue. */
async function move(sql: Sql) {
  await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);
}

function pendingToLane(sql: Sql) {
  return count(
    sql,
    "queue.deliveries",
    sql`state = 'pending' and subscriber = ${LANE}`,
  );
}

Deno.test("a consumer that makes room for a claim turned away looks again", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const inner = testDispatcher(sql);
    // The first request waits at the gate: consumer A holds its delivery.
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => entered = resolve);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    let first = true;
    const dispatcher = {
      send: async (request: Request) => {
        if (first) {
          first = false;
          entered();
          await gate;
        }
        return await inner.send(request);
      },
    };
    const share = new FairShare({
      perTenant: 10,
      perLane: 2,
      maxDetached: 0,
      stragglerMs: 60_000,
    });
    const options: ConsumerOptions = {
      sql,
      owner: "test-consumer",
      log: memoryLogger("error").logger,
      dispatcher,
      subscribers: { [LANE]: SUBSCRIBERS[LANE] },
      retryDelaysMs: [1_000],
      timeoutMs: 60_000,
      batchSize: 5,
      share,
    };

    await placeOrder(sql, tenantId, "O1");
    await move(sql);
    // A claims O1: one of the lane's two, so its batch is not full.
    const a = consumeOnce(options);
    await inside;
    // A handoff holds the lane's second place, as a move does before a
    // consumer takes it.
    const handed = [{ tenantId, subscriber: LANE }];
    share.hold(handed);

    await placeOrder(sql, tenantId, "O2");
    await move(sql);
    // B's claim finds the lane full and takes nothing.
    const b = await consumeOnce(options);
    assert.equal(b.more, false);
    assert.equal(await pendingToLane(sql), 1);

    open();
    // A's release makes room for what B was turned away from.
    const result = await a;
    assert.equal(result.more, true, "A sleeps, and O2 waits for the poll");
    await consumeOnce(options);
    share.release(handed);
    assert.equal(await pendingToLane(sql), 0);
    assert.equal(
      await count(sql, "t_recv_a.jobs", sql`order_id in ('O1', 'O2')`),
      2,
    );
  });
});
