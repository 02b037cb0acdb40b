/**
 * A JetStream consumer that stalls past its AckWait while it sends: the
 * broker gives the message to another consumer, which takes the delivery
 * over. When the stalled one comes back, its finish is fenced out by the
 * lease, and it must leave the broker's message alone too: the message is
 * the new holder's to acknowledge or to nak. An acknowledgement from the old
 * one would drop a retry the new holder asked for, and the delivery would
 * wait in PostgreSQL for a message the broker no longer has.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  ORIGIN,
  placeOrder,
  RECEIVERS,
  SENDER,
  testDispatcher,
  waitFor,
} from "./_messaging.ts";
import { natsTest } from "../_nats.ts";
import { openTestTransport, testJetStreamConsumer } from "./_transport.ts";
import { Dispatcher } from "../../lib/delivery/mod.ts";
import type { JetStreamConsumer } from "../../lib/carriers/jetstream/consumer.ts";
import {
  assertDelivered,
  assertStreamHolds,
} from "../../lib/carriers/conformance/broker.ts";

/** The broker's AckWait: a consumer silent for longer loses the message. */
const ACK_WAIT_MS = 1500;

natsTest(
  "jetstream: a consumer that lost its delivery to another leaves the broker's message to the new holder",
  async () => {
    await withTestDatabase(async ({ sql }) => {
      await createTestServices(sql);
      const tenantId = await createSandbox(sql);
      const transport = await openTestTransport("jetstream", sql, {
        routing: { OrderPlaced: ["t_recv_a"] },
        subscribers: RECEIVERS,
        ackWaitMs: ACK_WAIT_MS,
      });
      const { stream } = transport.broker!;
      const consumers: JetStreamConsumer[] = [];
      try {
        const envelope = await placeOrder(sql, tenantId, "O1");
        await transport.queue.publish([{ source: SENDER, envelope }]);

        // The first send hangs until the test lets it go; the second is
        // answered 503 (a retry); the third goes through.
        let sends = 0;
        let release!: () => void;
        const gate = new Promise<void>((resolve) => release = resolve);
        const receivers = testDispatcher(sql);
        const dispatcher = new Dispatcher().register(
          ORIGIN,
          async (request) => {
            const n = ++sends;
            if (n === 1) await gate;
            if (n === 2) {
              return Response.json({ reason: "busy" }, { status: 503 });
            }
            return await receivers.send(request);
          },
        );
        const consumer = (owner: string, ackWaitMs: number) => {
          const c = testJetStreamConsumer({
            sql,
            owner,
            stream,
            ackWaitMs,
            dispatcher,
            // Long enough that the retry cannot come before the old send is
            // let go (the new consumer's fetch would take it at once).
            retryDelaysMs: [3000, 3000, 3000],
            timeoutMs: 30_000,
          });
          consumers.push(c);
          return c;
        };
        // The old consumer believes its AckWait is 30 s, so it tells the
        // broker nothing for 10 s: to the broker, it stalled.
        const old = consumer("old", 30_000);
        const fresh = consumer("new", ACK_WAIT_MS);
        // One look at the sandbox's lane: a fetch, its sends left running.
        const look = async (c: JetStreamConsumer) => {
          c.notify(tenantId, 1);
          await c.tick();
          await c.fetched();
        };
        const delivery = async () => {
          const [d] = await sql`
          select state, lease_owner, attempts from queue.deliveries`;
          return d;
        };

        await look(old);
        await waitFor("the old consumer's attempt", async () => {
          const d = await delivery();
          return d.lease_owner?.startsWith("old#") && d.attempts === 1;
        });
        // Past the AckWait the broker gives the message to the new consumer,
        // whose attempt is answered 503: a retry, and a nak with its delay.
        await waitFor("the new consumer's retry", async () => {
          await look(fresh);
          return await count(sql, "queue.attempt_log") === 1;
        });
        const retry =
          await sql`select attempt, outcome, status from queue.attempt_log`;
        assert.deepEqual([...retry], [{
          attempt: 2,
          outcome: "retry",
          status: 503,
        }]);

        // The old send comes back (the receiver applied it): its finish is
        // fenced out, and the broker's message is not its to answer.
        release();
        await old.stop();
        assert.equal(sends, 2);
        assert.deepEqual({ ...await delivery() }, {
          state: "pending",
          lease_owner: null,
          attempts: 2,
        });
        assert.equal(await count(sql, "t_recv_a.jobs"), 1);

        // The retry comes: the broker still has the message for it.
        await waitFor("the retry to close the delivery", async () => {
          await look(fresh);
          return (await delivery()).state === "done";
        });
        const attempts = await sql`
        select attempt, outcome, status from queue.attempt_log order by attempt`;
        assert.deepEqual(
          attempts.map((a) => [a.attempt, a.outcome, a.status]),
          [
            [2, "retry", 503],
            [3, "done", 200],
          ],
        );
        assert.equal(await count(sql, "t_recv_a.jobs"), 1);
        assert.equal(await count(sql, "t_recv_a.inbox"), 1);
        await fresh.stop();
        await assertStreamHolds(transport.view!, [{
          messageId: envelope.messageId,
          subscriber: "t_recv_a",
        }]);
        await assertDelivered(transport.view!, { t_recv_a: 3 });
      } finally {
        await Promise.all(consumers.map((c) => c.stop()));
        await transport.close();
      }
    });
  },
);
