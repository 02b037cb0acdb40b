/**
 * The receiver's side of the ledger, through the transport: a receiver
 * that rolls back is retried and applies the message once; a lost
 * acknowledgement is delivered again and the inbox answers the repeat.
 */
import assert from "node:assert/strict";
import {
  type Answer,
  placeOrder,
  receiverApply,
  RECEIVERS,
  SENDER,
  testDispatcher,
} from "./services.ts";
import { count, waitFor, waitForDeliveries } from "./rows.ts";
import type { Sql } from "../../db/connect.ts";
import { setFault } from "../../faults/mod.ts";
import { CONSUMER_FAULTS } from "../../faults/mod.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

/** Attempts per subscriber, as queue.deliveries counts them. */
export async function attemptsBySubscriber(
  sql: Sql,
): Promise<Record<string, number>> {
  const rows = await sql<{ subscriber: string; n: number }[]>`
    select subscriber, sum(attempts)::int as n from queue.deliveries
     group by subscriber`;
  return Object.fromEntries(rows.map((r) => [r.subscriber, r.n]));
}

export const receiverScenarios: Scenario[] = [{
  name:
    "receiver rolls back (500): the delivery stays pending and retries, no inbox row, no job; once it recovers, one job",
  run: async ({ sql, at, tenantId, view, workers }) => {
    let broken = true;
    const dispatcher = testDispatcher(sql, {
      apply: {
        t_recv_a: async (tx, envelope) => {
          // The effect is written, then the receiver fails before commit.
          await receiverApply("t_recv_a")(tx, envelope);
          if (broken) throw new Error("disk full");
          return { job: envelope.aggregateId };
        },
      },
    });
    // Enough retries that the delivery cannot die while the test looks.
    const retryDelaysMs = Array(20).fill(50);
    await workers({ dispatcher, retryDelaysMs }, async () => {
      const envelope = await placeOrder(sql, tenantId, "O1");
      await waitFor(
        "three failed attempts at t_recv_a",
        async () =>
          await count(
            sql,
            "queue.attempt_log",
            sql`outcome = 'retry' and status = 500`,
          ) >= 3,
      );
      const [d] = await sql`
        select state, attempts, last_status, last_error from queue.deliveries
         where subscriber = 't_recv_a'`;
      assert.ok(["pending", "in_flight"].includes(d.state), d.state);
      assert.ok(d.attempts >= 3);
      assert.equal(d.last_status, 500);
      assert.equal(
        d.last_error,
        "t_recv_a answered 500: t_recv_a failed: disk full",
      );
      assert.equal(await count(sql, "t_recv_a.inbox"), 0);
      assert.equal(await count(sql, "t_recv_a.jobs"), 0);
      // The other receivers are not held back.
      await waitForDeliveries(sql, "done", 2);
      assert.equal(await count(sql, "t_recv_b.jobs"), 1);
      assert.equal(await count(sql, "t_recv_c.jobs"), 1);

      broken = false;
      await waitForDeliveries(sql, "done", 3);
      const [job] = await at("t_recv_a")`select message_id from t_recv_a.jobs`;
      assert.equal(job.message_id, envelope.messageId);
      assert.equal(await count(sql, "t_recv_a.inbox"), 1);
      assert.equal(
        await count(sql, "queue.attempt_log", sql`outcome = 'done'`),
        3,
      );
      // Over JetStream each retry was a redelivery of the one message
      // (nak with the retry's delay), never a second publish.
      if (view) {
        await assertStreamHolds(view, toEach([envelope.messageId], RECEIVERS));
        await assertDelivered(view, await attemptsBySubscriber(sql));
      }
    });
  },
}, {
  name:
    "lost acknowledgement: the receiver applied it, the delivery is still owed; the redelivery is a duplicate and closes it",
  run: async ({ sql, at, tenantId, view, workers }) => {
    await setFault(sql, tenantId, CONSUMER_FAULTS.lostAcks, true);
    const answers: Answer[] = [];
    const dispatcher = testDispatcher(sql, {
      onAnswer: (a) => answers.push(a),
    });
    // 500 ms between attempts: time to look and switch the fault off before
    // the second attempt. Should the second be lost too, it stays owed.
    const retryDelaysMs = [500, 500, 500];
    await workers({ dispatcher, retryDelaysMs }, async () => {
      const envelope = await placeOrder(sql, tenantId, "O1");
      await waitFor(
        "a first attempt at every receiver",
        async () =>
          await count(sql, "queue.attempt_log", sql`attempt = 1`) === 3,
      );
      const deliveries = await sql`
        select subscriber, state, last_status, last_error from queue.deliveries
         order by subscriber`;
      assert.equal(deliveries.length, 3);
      for (const d of deliveries) {
        assert.equal(d.state, "pending", d.subscriber);
        assert.equal(d.last_status, 200);
        assert.match(d.last_error, /acknowledgement lost.*lostAcks/);
      }
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.inbox`), 1, r);
        assert.equal(await count(sql, `${r}.jobs`), 1, r);
      }
      // The sender's part is done; the obligation is not closed.
      assert.equal(await count(sql, "t_sender.outbox"), 0);

      await setFault(sql, tenantId, CONSUMER_FAULTS.lostAcks, false);
      await waitForDeliveries(sql, "done", 3);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.inbox`), 1, r);
        const jobs = await at(r)`select message_id from ${sql(r + ".jobs")}`;
        assert.deepEqual(jobs.map((j) => j.message_id), [envelope.messageId]);
        assert.equal(await count(sql, `${r}.refusals`), 0, r);
        const mine = answers.filter((a) => a.receiver === r);
        assert.ok(mine.length >= 2, `${r} answered ${mine.length} time(s)`);
        assert.deepEqual(mine[0].body, { job: "O1", duplicate: false });
        for (const later of mine.slice(1)) {
          assert.equal(later.status, 200);
          assert.deepEqual(later.body, { job: "O1", duplicate: true });
        }
      }
      // Nothing is owed any more.
      assert.equal(
        await count(sql, `${SENDER}.outbox`),
        0,
      );
      assert.equal(
        await count(sql, "queue.deliveries", sql`state <> 'done'`),
        0,
      );
      // Over JetStream the repeat was the broker's redelivery of the one
      // message it holds per receiver, answered by the inbox.
      if (view) {
        await assertStreamHolds(view, toEach([envelope.messageId], RECEIVERS));
        const delivered = await attemptsBySubscriber(sql);
        for (const r of RECEIVERS) assert.ok(delivered[r] >= 2, r);
        await assertDelivered(view, delivered);
      }
    });
  },
}];
