/**
 * What the messaging core does when a receiver fails: it rolls back, its
 * acknowledgement is lost, it refuses a contradictory instruction, or the
 * message is older than the replay horizon.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  type Answer,
  count,
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  placeOrder,
  receiverApply,
  RECEIVERS,
  SENDER,
  SUBSCRIBERS,
  testDispatcher,
  waitFor,
  waitForDeliveries,
  waitForJobs,
  withWorkers,
} from "./_messaging.ts";
import { asService } from "../lib/db/service.ts";
import { setFault } from "../lib/faults/mod.ts";
import { type Apply, NotYet, receive } from "../lib/inbox/mod.ts";
import { z } from "zod";
import { append, newEnvelope } from "../lib/outbox/mod.ts";
import { CONSUMER_FAULTS, redrive } from "../lib/queue/mod.ts";

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

Deno.test("receiver fails (500): the delivery stays pending and retries, no inbox row, no job; once it recovers, one job", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
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
    await withWorkers(db, { dispatcher, retryDelaysMs }, async () => {
      const envelope = await placeOrder(sql, sandboxId, "O1");
      await waitFor(
        "three failed attempts at t_recv_a",
        async () =>
          await count(
            sql,
            "queue.attempts",
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
      const [job] = await sql`select message_id from t_recv_a.jobs`;
      assert.equal(job.message_id, envelope.messageId);
      assert.equal(await count(sql, "t_recv_a.inbox"), 1);
      assert.equal(
        await count(sql, "queue.attempts", sql`outcome = 'done'`),
        3,
      );
    });
  });
});

Deno.test("lost acknowledgement: the receiver applied it, the delivery is still owed; the redelivery is a duplicate and closes it", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    await setFault(sql, sandboxId, CONSUMER_FAULTS.lostAcks, true);
    const answers: Answer[] = [];
    const dispatcher = testDispatcher(sql, {
      onAnswer: (a) => answers.push(a),
    });
    // 500 ms between attempts: time to look and switch the fault off before
    // the second attempt. Should the second be lost too, it stays owed.
    const retryDelaysMs = [500, 500, 500];
    await withWorkers(db, { dispatcher, retryDelaysMs }, async () => {
      const envelope = await placeOrder(sql, sandboxId, "O1");
      await waitFor(
        "a first attempt at every receiver",
        async () => await count(sql, "queue.attempts", sql`attempt = 1`) === 3,
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
      const [row] = await sql`select state from t_sender.outbox`;
      assert.equal(row.state, "published");

      await setFault(sql, sandboxId, CONSUMER_FAULTS.lostAcks, false);
      await waitForDeliveries(sql, "done", 3);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.inbox`), 1, r);
        const jobs = await sql`select message_id from ${sql(r + ".jobs")}`;
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
        await count(sql, `${SENDER}.outbox`, sql`state <> 'published'`),
        0,
      );
      assert.equal(
        await count(sql, "queue.deliveries", sql`state <> 'done'`),
        0,
      );
    });
  });
});

Deno.test("contradictory instruction: a second job for one order is refused with 422, recorded, dead at once; a repeat gets the same answer", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    const answers: Answer[] = [];
    const dispatcher = testDispatcher(sql, {
      onAnswer: (a) => answers.push(a),
    });
    await withWorkers(db, { dispatcher }, async () => {
      const first = await placeOrder(sql, sandboxId, "O1");
      await waitForDeliveries(sql, "done", 3);

      // A new message id that asks for a second job for the same order.
      const second = newEnvelope({
        type: "OrderPlaced",
        aggregateId: "O1",
        aggregateVersion: 2,
        sandboxId,
        payload: { orderId: "O1" },
      });
      await asService(sql, SENDER, { sandboxId }, (tx) => append(tx, [second]));
      await waitForDeliveries(sql, "dead", 3);

      const dead = await sql`
        select subscriber, attempts, last_status, last_error, dead_at
          from queue.deliveries where message_id = ${second.messageId}
         order by subscriber`;
      for (const d of dead) {
        // Dead on the first attempt: a refusal is not retried.
        assert.equal(d.attempts, 1, d.subscriber);
        assert.equal(d.last_status, 422);
        assert.equal(
          d.last_error,
          `${d.subscriber} answered 422: a job for order O1 exists already`,
        );
        assert.ok(d.dead_at instanceof Date);
      }
      assert.equal(
        await count(sql, "queue.attempts", sql`outcome = 'dead'`),
        3,
      );
      for (const r of RECEIVERS) {
        const refusals = await sql`
          select message_id, type, reason from ${sql(r + ".refusals")}`;
        assert.deepEqual([...refusals], [{
          message_id: second.messageId,
          type: "OrderPlaced",
          reason: "a job for order O1 exists already",
        }]);
        const jobs = await sql`select order_id, message_id from ${
          sql(r + ".jobs")
        }`;
        assert.deepEqual([...jobs], [{
          order_id: "O1",
          message_id: first.messageId,
        }]);
        const [inbox] = await sql`
          select status, outcome from ${sql(r + ".inbox")}
           where message_id = ${second.messageId}`;
        assert.equal(inbox.status, 422);
        assert.deepEqual(inbox.outcome, {
          reason: "a job for order O1 exists already",
        });
      }

      // The same message id again, straight to the receiver: the stored answer.
      const response = await dispatcher.send(
        new Request(SUBSCRIBERS.t_recv_a.url, {
          method: "POST",
          body: JSON.stringify(second),
        }),
      );
      assert.equal(response.status, 422);
      assert.deepEqual(await response.json(), {
        reason: "a job for order O1 exists already",
        duplicate: true,
      });

      // And through the queue: a redrive goes again, is refused again, and
      // changes nothing at the receivers.
      const redriven = await redrive(
        sql,
        sandboxId,
        { subscriber: "t_recv_b" },
        "operator",
      );
      assert.equal(redriven.length, 1);
      await waitFor("the redrive's attempt", async () => {
        const [d] = await sql`select state, attempts from queue.deliveries
          where id = ${redriven[0]}`;
        return d.state === "dead" && d.attempts === 2;
      });
      const b = answers.filter((a) =>
        a.receiver === "t_recv_b" && a.messageId === second.messageId
      );
      assert.equal(b.length, 2);
      assert.deepEqual(b.map((a) => [a.status, a.body.duplicate]), [
        [422, false],
        [422, true],
      ]);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.refusals`), 1, r);
        assert.equal(await count(sql, `${r}.jobs`), 1, r);
        assert.equal(await count(sql, `${r}.inbox`), 2, r);
      }
    });
  });
});

Deno.test("a message older than the replay horizon is refused with 422 and recorded; no job", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    await withWorkers(db, {}, async () => {
      const occurredAt = new Date(Date.now() - 31 * 86_400_000).toISOString();
      const old = await placeOrder(sql, sandboxId, "O1", { occurredAt });
      assert.equal(old.occurredAt, occurredAt);
      await waitForDeliveries(sql, "dead", 3);
      const reason = "older than the replay horizon of 30 days";
      for (const r of RECEIVERS) {
        const [d] = await sql`
          select attempts, last_status, last_error from queue.deliveries
           where subscriber = ${r}`;
        assert.equal(d.attempts, 1);
        assert.equal(d.last_status, 422);
        assert.equal(d.last_error, `${r} answered 422: ${reason}`);
        const refusals = await sql`
          select message_id, reason from ${sql(r + ".refusals")}`;
        assert.deepEqual([...refusals], [{
          message_id: old.messageId,
          reason,
        }]);
        const [inbox] = await sql`select status from ${sql(r + ".inbox")}`;
        assert.equal(inbox.status, 422);
        assert.equal(await count(sql, `${r}.jobs`), 0, r);
      }

      // One day inside the horizon is applied as usual.
      const recent = new Date(Date.now() - 29 * 86_400_000).toISOString();
      await placeOrder(sql, sandboxId, "O2", { occurredAt: recent });
      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", 3);
    });
  });
});

Deno.test("poison message: a payload that fails its schema is refused (422, malformed: <field>), dead at once, recorded; the other receivers apply it", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    // t_recv_a expects a quantity that the sender's OrderPlaced lacks.
    const schema = z.object({
      orderId: z.string(),
      lines: z.array(z.object({ qty: z.number().int() })),
    });
    const strict: Apply = async (tx, e) => {
      schema.parse(e.payload);
      return await receiverApply("t_recv_a")(tx, e);
    };
    const dispatcher = testDispatcher(sql, { apply: { t_recv_a: strict } });
    const reason =
      "malformed: lines: Invalid input: expected array, received undefined";
    await withWorkers(db, { dispatcher }, async () => {
      const sent = await placeOrder(sql, sandboxId, "O1");
      await waitForDeliveries(sql, "done", 2);
      await waitForDeliveries(sql, "dead", 1);
      const [dead] = await sql`
        select subscriber, attempts, last_status, last_error
          from queue.deliveries where state = 'dead'`;
      // Dead on its first attempt: no retry can make the payload parse.
      assert.deepEqual({ ...dead }, {
        subscriber: "t_recv_a",
        attempts: 1,
        last_status: 422,
        last_error: `t_recv_a answered 422: ${reason}`,
      });
      const refusals = await sql`
        select message_id, type, reason from t_recv_a.refusals`;
      assert.deepEqual([...refusals], [{
        message_id: sent.messageId,
        type: "OrderPlaced",
        reason,
      }]);
      const [inbox] = await sql`select status, outcome from t_recv_a.inbox`;
      assert.deepEqual({ ...inbox }, { status: 422, outcome: { reason } });
      assert.equal(await count(sql, "t_recv_a.jobs"), 0);
      assert.equal(await count(sql, "t_recv_b.jobs"), 1);
      assert.equal(await count(sql, "t_recv_c.jobs"), 1);
    });

    // Inside a caller's transaction (receive) the same: refused, recorded.
    const other = orderPlacedEnvelope(sandboxId, "O2");
    const result = await asService(
      sql,
      "t_recv_a",
      { sandboxId },
      (tx) => receive(tx, other, strict, { replayHorizonDays: 30 }),
    );
    assert.deepEqual(result, {
      status: 422,
      body: { reason },
      duplicate: false,
    });
    assert.equal(await count(sql, "t_recv_a.refusals"), 2);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
  });
});
