/**
 * A receiver that always answers 503: retried at the configured delays, then
 * a dead letter; an operator redrives it (the history stays) or refuses it
 * (closed with a reason, an actor and a time). Over JetStream a retry is a
 * redelivery after a nak with the retry's delay, a dead letter is
 * acknowledged, and a redrive publishes the message again for its one
 * subscriber under a fresh broker id.
 */
import assert from "node:assert/strict";
import {
  createTenant,
  placeOrder,
  receiverFault,
  RECEIVERS,
} from "./services.ts";
import { count, waitFor } from "./rows.ts";
import type { Sql } from "../../db/connect.ts";
import { setFault } from "../../faults/mod.ts";
import { refuse } from "../../ledger/mod.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

const RETRY_DELAYS_MS = [100, 200, 300];
const REFUSES = receiverFault("t_recv_a", "Refuses");

interface DeliveryRow {
  id: number;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  dead_at: Date | null;
  redrives: number;
  refused_reason: string | null;
  refused_by: string | null;
  refused_at: Date | null;
}

async function deliveryOf(
  sql: Sql,
  orderId: string,
  subscriber: string,
): Promise<DeliveryRow | undefined> {
  const [d] = await sql<(Omit<DeliveryRow, "id"> & { id: string })[]>`
    select id, state, attempts, last_status, last_error, dead_at, redrives,
           refused_reason, refused_by, refused_at
      from queue.deliveries
     where aggregate_id = ${orderId} and subscriber = ${subscriber}`;
  return d && { ...d, id: Number(d.id) };
}

/** The delivery, which the test knows exists. */
async function delivery(sql: Sql, orderId: string, subscriber: string) {
  const d = await deliveryOf(sql, orderId, subscriber);
  assert.ok(d, `no delivery of ${orderId} to ${subscriber}`);
  return d;
}

async function waitForState(
  sql: Sql,
  orderId: string,
  subscriber: string,
  state: string,
  attempts?: number,
  timeoutMs?: number,
) {
  await waitFor(
    `${subscriber}'s delivery of ${orderId} ${state}`,
    async () => {
      const d = await deliveryOf(sql, orderId, subscriber);
      return d?.state === state &&
        (attempts === undefined || d.attempts === attempts);
    },
    timeoutMs,
  );
}

export const deadLetterScenarios: Scenario[] = [{
  name:
    "always 503: four attempts at the configured delays, then dead; others unaffected; redrive delivers once and keeps the history",
  run: async ({ sql, tenantId, view, workers, redrive }) => {
    await setFault(sql, tenantId, REFUSES, true);
    await workers({ retryDelaysMs: RETRY_DELAYS_MS }, async () => {
      const { messageId } = await placeOrder(sql, tenantId, "O1");
      await waitForState(sql, "O1", "t_recv_a", "dead");

      const dead = await delivery(sql, "O1", "t_recv_a");
      assert.equal(dead.attempts, 4);
      assert.equal(dead.last_status, 503);
      assert.equal(
        dead.last_error,
        "t_recv_a answered 503: t_recv_a refuses deliveries",
      );
      assert.ok(dead.dead_at instanceof Date);
      const attempts = await sql`
      select attempt, started_at, status, outcome, error from queue.attempt_log
       where delivery_id = ${dead.id} order by attempt`;
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.status, a.outcome]),
        [[1, 503, "retry"], [2, 503, "retry"], [3, 503, "retry"], [
          4,
          503,
          "dead",
        ]],
      );
      for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
        const gap = attempts[i + 1].started_at.getTime() -
          attempts[i].started_at.getTime();
        assert.ok(
          gap >= delay,
          `retry ${i + 1} came ${gap} ms after attempt ${
            i + 1
          }; the delay is ${delay} ms`,
        );
      }
      for (const r of ["t_recv_b", "t_recv_c"]) {
        await waitForState(sql, "O1", r, "done", 1);
        assert.equal(await count(sql, `${r}.jobs`), 1, r);
      }
      assert.equal(await count(sql, "t_recv_a.jobs"), 0);
      assert.equal(await count(sql, "t_recv_a.inbox"), 0);
      // Over JetStream: four deliveries of one message, the last one
      // acknowledged as dead.
      if (view) {
        await assertStreamHolds(view, toEach([messageId], RECEIVERS));
        await assertDelivered(view, { t_recv_a: 4, t_recv_b: 1, t_recv_c: 1 });
      }

      // The fault clears; an operator redrives.
      await setFault(sql, tenantId, REFUSES, false);
      const redriven = await redrive(
        tenantId,
        { subscriber: "t_recv_a" },
        "operator@test",
      );
      assert.deepEqual(redriven, [dead.id]);
      await waitForState(sql, "O1", "t_recv_a", "done");
      const after = await delivery(sql, "O1", "t_recv_a");
      assert.equal(after.attempts, 5);
      assert.equal(after.redrives, 1);
      assert.equal(after.last_status, 200);
      assert.equal(after.last_error, null);
      assert.equal(await count(sql, "t_recv_a.jobs"), 1);
      assert.equal(await count(sql, "t_recv_a.inbox"), 1);
      const history = await sql`
      select attempt, outcome from queue.attempt_log
       where delivery_id = ${dead.id} order by attempt`;
      assert.deepEqual(
        history.map((a) => [a.attempt, a.outcome]),
        [[1, "retry"], [2, "retry"], [3, "retry"], [4, "dead"], [5, "done"]],
      );
      const actions = await sql`
      select delivery_id, action, actor, reason from queue.actions`;
      assert.deepEqual(
        actions.map((a) => ({ ...a, delivery_id: Number(a.delivery_id) })),
        [{
          delivery_id: dead.id,
          action: "redrive",
          actor: "operator@test",
          reason: null,
        }],
      );
      // Nothing left to redrive.
      assert.deepEqual(
        await redrive(tenantId, { subscriber: "t_recv_a" }, "operator"),
        [],
      );
      // Over JetStream the redrive was published for t_recv_a alone, under
      // a fresh broker id: the other receivers got nothing more.
      if (view) {
        await assertStreamHolds(view, [
          ...toEach([messageId], RECEIVERS),
          { messageId, subscriber: "t_recv_a", redrive: 1 },
        ]);
        await assertDelivered(view, { t_recv_a: 5, t_recv_b: 1, t_recv_c: 1 });
      }
    });
  },
}, {
  name: "retries come at their delay, not at the next poll",
  run: async ({ sql, tenantId, view, workers }) => {
    await setFault(sql, tenantId, REFUSES, true);
    // A poll far longer than the retry delays: only a loop that knows when
    // its retry is due wakes in time.
    const pollMs = 5_000;
    await workers(
      { pollMs, retryDelaysMs: RETRY_DELAYS_MS },
      async () => {
        await placeOrder(sql, tenantId, "O1");
        await waitForState(sql, "O1", "t_recv_a", "dead", undefined, pollMs);
        const attempts = await sql<{ started_at: Date }[]>`
        select started_at from queue.attempt_log a
          join queue.deliveries d on d.id = a.delivery_id
         where d.subscriber = 't_recv_a' order by attempt`;
        assert.equal(attempts.length, 4);
        for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
          const gap = attempts[i + 1].started_at.getTime() -
            attempts[i].started_at.getTime();
          // The delay plus 10 % jitter plus the attempt itself; a poll
          // would make it seconds.
          assert.ok(
            gap >= delay && gap < delay * 1.1 + 500,
            `retry ${i + 1} came ${gap} ms after attempt ${
              i + 1
            }; the delay is ${delay} ms`,
          );
        }
        // Over JetStream each retry was the broker's redelivery after the
        // nak's delay.
        if (view) {
          await assertDelivered(view, {
            t_recv_a: 4,
            t_recv_b: 1,
            t_recv_c: 1,
          });
        }
      },
    );
  },
}, {
  name: "a redrive that fails again is dead again at once",
  run: async ({ sql, tenantId, view, workers, redrive }) => {
    await setFault(sql, tenantId, REFUSES, true);
    await workers({ retryDelaysMs: [20] }, async () => {
      const { messageId } = await placeOrder(sql, tenantId, "O1");
      await waitForState(sql, "O1", "t_recv_a", "dead", 2);
      const [id] = await redrive(tenantId, {}, "operator");
      await waitForState(sql, "O1", "t_recv_a", "dead", 3);
      const d = await delivery(sql, "O1", "t_recv_a");
      assert.equal(d.id, id);
      assert.equal(d.redrives, 1);
      assert.equal(
        await count(sql, "queue.attempt_log", sql`delivery_id = ${id}`),
        3,
      );
      if (view) {
        await assertStreamHolds(view, [
          ...toEach([messageId], RECEIVERS),
          { messageId, subscriber: "t_recv_a", redrive: 1 },
        ]);
        await assertDelivered(view, { t_recv_a: 3, t_recv_b: 1, t_recv_c: 1 });
      }
    });
  },
}, {
  name:
    "refuse: a dead letter is closed with reason, actor and time, and an action row; an empty reason is refused",
  run: async ({ sql, tenantId, view, workers, redrive }) => {
    const other = await createTenant(sql, "other");
    await setFault(sql, tenantId, REFUSES, true);
    await workers({ retryDelaysMs: [20, 20, 20] }, async () => {
      const sent = [
        await placeOrder(sql, tenantId, "O1"),
        await placeOrder(sql, tenantId, "O2"),
      ].map((e) => e.messageId);
      await waitForState(sql, "O1", "t_recv_a", "dead");
      await waitForState(sql, "O2", "t_recv_a", "dead");
      const o1 = await delivery(sql, "O1", "t_recv_a");
      const o2 = await delivery(sql, "O2", "t_recv_a");

      for (const reason of ["", "   "]) {
        await assert.rejects(
          () => refuse(sql, tenantId, { ids: [o2.id] }, reason, "operator"),
          TypeError,
        );
      }
      // Another tenant's operator matches nothing.
      assert.deepEqual(
        await refuse(sql, other, { ids: [o2.id] }, "not mine", "intruder"),
        [],
      );
      assert.deepEqual(
        await redrive(other, { ids: [o2.id] }, "intruder"),
        [],
      );
      assert.equal(await count(sql, "queue.actions"), 0);
      assert.equal((await delivery(sql, "O2", "t_recv_a")).state, "dead");

      const before = new Date();
      const refused = await refuse(
        sql,
        tenantId,
        { ids: [o2.id] },
        "the customer cancelled by phone",
        "operator@test",
      );
      assert.deepEqual(refused, [o2.id]);
      const d = await delivery(sql, "O2", "t_recv_a");
      assert.equal(d.state, "refused");
      assert.equal(d.refused_reason, "the customer cancelled by phone");
      assert.equal(d.refused_by, "operator@test");
      assert.ok(d.refused_at instanceof Date);
      assert.ok(d.refused_at.getTime() >= before.getTime() - 1000);
      assert.ok(d.refused_at.getTime() <= Date.now() + 1000);
      // The attempt history stays.
      assert.equal(
        await count(sql, "queue.attempt_log", sql`delivery_id = ${o2.id}`),
        4,
      );
      const actions = await sql`
      select delivery_id, action, actor, reason from queue.actions`;
      assert.deepEqual(
        actions.map((a) => ({ ...a, delivery_id: Number(a.delivery_id) })),
        [{
          delivery_id: o2.id,
          action: "refuse",
          actor: "operator@test",
          reason: "the customer cancelled by phone",
        }],
      );
      // Refused is final: neither redrive nor refuse matches it again.
      assert.deepEqual(
        await redrive(tenantId, { ids: [o2.id] }, "operator"),
        [],
      );
      assert.deepEqual(
        await refuse(sql, tenantId, { ids: [o2.id] }, "again", "operator"),
        [],
      );
      // The other dead letter is untouched.
      assert.equal((await delivery(sql, "O1", "t_recv_a")).state, "dead");
      assert.equal(o1.state, "dead");
      // A refusal closes rows only: nothing went to the broker again.
      if (view) {
        await assertStreamHolds(view, toEach(sent, RECEIVERS));
        await assertDelivered(view, { t_recv_a: 8, t_recv_b: 2, t_recv_c: 2 });
      }
    });
  },
}];
