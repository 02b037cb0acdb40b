/**
 * A stream made again starts its sequences over. A consumer that had
 * fetched a lane up to some sequence must still act on a bell for the new
 * stream's first messages, not take them as fetched already: otherwise they
 * wait for the next look at the lanes (the poll, 5 s by default).
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  RECEIVERS,
  SENDER,
  testDispatcher,
  waitFor,
} from "./_messaging.ts";
import { natsTest } from "../_nats.ts";
import { openTestTransport, testJetStreamConsumer } from "./_transport.ts";

natsTest(
  "jetstream: after the stream is made again, a bell for its first sequences is not taken as fetched",
  async () => {
    await withTestDatabase(async ({ sql }) => {
      await createTestServices(sql);
      const tenantId = await createSandbox(sql);
      const transport = await openTestTransport("jetstream", sql, {
        routing: { OrderPlaced: ["t_recv_a"] },
        subscribers: RECEIVERS,
      });
      const { stream } = transport.broker!;
      const consumer = testJetStreamConsumer({
        sql,
        owner: "here",
        stream,
        ackWaitMs: 10_000,
        dispatcher: testDispatcher(sql),
      });
      // Publishes one order, rings as the relay's bell would (with the
      // sequence the broker gave it), and lets the consumer look once.
      const deliverOne = async (name: string, applied: number) => {
        const envelope = await placeOrder(sql, tenantId, name);
        await transport.queue.publish([{ source: SENDER, envelope }]);
        const info = await stream.jsm.streams.info(stream.names.stream);
        consumer.notify(tenantId, 1, info.state.last_seq);
        await consumer.tick();
        await consumer.fetched();
        await waitFor(
          `${applied} applied`,
          async () => await count(sql, "t_recv_a.jobs") === applied,
          3_000,
        );
      };
      try {
        await deliverOne("O1", 1);
        await deliverOne("O2", 2);
        await deliverOne("O3", 3);
        assert.equal(
          await stream.jsm.streams.delete(stream.names.stream),
          true,
        );
        assert.equal(await stream.lanes.makeStreamIfGone(), true);
        // Sequence 1 of the new stream, below the 3 fetched of the old.
        await deliverOne("O4", 4);
      } finally {
        await consumer.stop();
        await transport.close();
      }
    });
  },
);
