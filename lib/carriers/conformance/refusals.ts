/**
 * Refusals through the transport: a contradictory instruction, a message
 * older than the replay horizon and a poison payload are refused by the
 * receiver, recorded in its refusals and inbox, and dead at once; a repeat
 * (straight, or a redrive) gets the same answer and changes nothing.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import {
  type Answer,
  orderPlacedEnvelope,
  placeOrder,
  receiverApply,
  RECEIVERS,
  SENDER,
  SUBSCRIBERS,
  testDispatcher,
} from "./services.ts";
import { count, waitFor, waitForDeliveries, waitForJobs } from "./rows.ts";
import { asService } from "../../db/service.ts";
import { type Apply, receiveOnce } from "../../inbox/mod.ts";
import { append, newEnvelope } from "../../outbox/mod.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

export const refusalScenarios: Scenario[] = [{
  name:
    "contradictory instruction: a second job for one order is refused with 422, recorded, dead at once; a repeat gets the same answer",
  run: async ({ sql, at, tenantId, view, workers, redrive }) => {
    const answers: Answer[] = [];
    const dispatcher = testDispatcher(sql, {
      onAnswer: (a) => answers.push(a),
    });
    await workers({ dispatcher }, async () => {
      const first = await placeOrder(sql, tenantId, "O1");
      await waitForDeliveries(sql, "done", 3);

      // A new message id that asks for a second job for the same order.
      const second = newEnvelope({
        type: "OrderPlaced",
        aggregateId: "O1",
        aggregateVersion: 2,
        tenantId: tenantId,
        payload: { orderId: "O1" },
      });
      await asService(sql, SENDER, { tenantId }, (tx) => append(tx, [second]));
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
        await count(sql, "queue.attempt_log", sql`outcome = 'dead'`),
        3,
      );
      for (const r of RECEIVERS) {
        const refusals = await at(r)`
          select message_id, type, reason from ${sql(r + ".refusals")}`;
        assert.deepEqual([...refusals], [{
          message_id: second.messageId,
          type: "OrderPlaced",
          reason: "a job for order O1 exists already",
        }]);
        const jobs = await at(r)`select order_id, message_id from ${
          sql(r + ".jobs")
        }`;
        assert.deepEqual([...jobs], [{
          order_id: "O1",
          message_id: first.messageId,
        }]);
        const [inbox] = await at(r)`
          select status, outcome from ${sql(r + ".inbox")}
           where message_id = ${second.messageId}`;
        assert.equal(inbox.status, 422);
        assert.deepEqual(inbox.outcome, {
          reason: "a job for order O1 exists already",
        });
      }
      // A dead letter is acknowledged to the broker: not delivered again.
      const messages = [first.messageId, second.messageId];
      if (view) {
        await assertStreamHolds(view, toEach(messages, RECEIVERS));
        await assertDelivered(view, { t_recv_a: 2, t_recv_b: 2, t_recv_c: 2 });
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
        tenantId,
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
      // Over JetStream the redrive went to t_recv_b alone, as a message of
      // its own under a fresh broker id.
      if (view) {
        await assertStreamHolds(view, [
          ...toEach(messages, RECEIVERS),
          { messageId: second.messageId, subscriber: "t_recv_b", redrive: 1 },
        ]);
        await assertDelivered(view, { t_recv_a: 2, t_recv_b: 3, t_recv_c: 2 });
      }
    });
  },
}, {
  name:
    "a message older than the replay horizon is refused with 422 and recorded; no job",
  run: async ({ sql, at, tenantId, view, workers }) => {
    await workers({}, async () => {
      const occurredAt = new Date(Date.now() - 31 * 86_400_000).toISOString();
      const old = await placeOrder(sql, tenantId, "O1", { occurredAt });
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
        const refusals = await at(r)`
          select message_id, reason from ${sql(r + ".refusals")}`;
        assert.deepEqual([...refusals], [{
          message_id: old.messageId,
          reason,
        }]);
        const [inbox] = await at(r)`select status from ${sql(r + ".inbox")}`;
        assert.equal(inbox.status, 422);
        assert.equal(await count(sql, `${r}.jobs`), 0, r);
      }

      // One day inside the horizon is applied as usual.
      const recent = new Date(Date.now() - 29 * 86_400_000).toISOString();
      const next = await placeOrder(sql, tenantId, "O2", {
        occurredAt: recent,
      });
      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", 3);
      // Over JetStream: each once, the refused ones acknowledged as dead.
      if (view) {
        const messages = [old.messageId, next.messageId];
        await assertStreamHolds(view, toEach(messages, RECEIVERS));
        await assertDelivered(view, { t_recv_a: 2, t_recv_b: 2, t_recv_c: 2 });
      }
    });
  },
}, {
  name:
    "poison message: a payload that fails its schema is refused (422, malformed: <field>), dead at once, recorded; the other receivers apply it",
  run: async ({ sql, at, tenantId, view, workers }) => {
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
    await workers({ dispatcher }, async () => {
      const sent = await placeOrder(sql, tenantId, "O1");
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
      const refusals = await at("t_recv_a")`
        select message_id, type, reason from t_recv_a.refusals`;
      assert.deepEqual([...refusals], [{
        message_id: sent.messageId,
        type: "OrderPlaced",
        reason,
      }]);
      const [inbox] = await at("t_recv_a")`
        select status, outcome from t_recv_a.inbox`;
      assert.deepEqual({ ...inbox }, { status: 422, outcome: { reason } });
      assert.equal(await count(sql, "t_recv_a.jobs"), 0);
      assert.equal(await count(sql, "t_recv_b.jobs"), 1);
      assert.equal(await count(sql, "t_recv_c.jobs"), 1);
      if (view) {
        await assertStreamHolds(view, toEach([sent.messageId], RECEIVERS));
        await assertDelivered(view, { t_recv_a: 1, t_recv_b: 1, t_recv_c: 1 });
      }
    });

    // Called directly (receiveOnce, the receiver's own transaction) the
    // same: refused, recorded.
    const other = orderPlacedEnvelope(tenantId, "O2");
    const result = await receiveOnce(sql, "t_recv_a", other, strict, {
      replayHorizonDays: 30,
    });
    assert.deepEqual(result, {
      status: 422,
      body: { reason },
      duplicate: false,
    });
    assert.equal(await count(sql, "t_recv_a.refusals"), 2);
    assert.equal(await count(sql, "t_recv_a.jobs"), 0);
  },
}];
