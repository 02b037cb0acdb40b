/**
 * A stream deleted while the bakery runs over JetStream (an operator's
 * mistake, a broker restored without it) is made again by the next publish
 * that meets its absence: a paid order placed after the deletion reaches
 * all its receivers without a restart.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { orderSettles, payVia, placeOrderVia, withTestBakery } from "./_app.ts";
import { dropStream, natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";
import { openTestStream } from "./core/_transport.ts";
import { SENDERS } from "../services/routing.ts";

natsTest(
  "over JetStream a stream deleted at runtime is made again, and the next paid order reaches its receivers",
  async () => {
    const stream = testStream();
    try {
      await withTestBakery(async (t) => {
        const client = t.client();
        const first = await placeOrderVia(client);
        await payVia(client, first.orderId);
        await orderSettles(client, first.orderId, "paid");
        const nc = await connect({ servers: TEST_NATS_URL });
        try {
          const jsm = await jetstreamManager(nc);
          // The one stream, or split, each sender's.
          const streams = [...new Set(SENDERS.map((s) => t.streamOf(s)))];
          for (const name of streams) {
            assert.equal(await jsm.streams.delete(name), true);
          }
          const { orderId } = await placeOrderVia(client);
          await payVia(client, orderId);
          const order = await orderSettles(client, orderId, "paid", 20_000)
            .catch(async (error) => {
              // What the streams and the queues' rows held when it timed out.
              // The workers' warnings and errors: what the broker told them.
              for (const line of t.lines) {
                if (
                  line.level === "warn" || line.level === "error" ||
                  String(line.event).startsWith("broker")
                ) {
                  console.log(JSON.stringify(line).slice(0, 600));
                }
              }
              for (const sender of SENDERS) {
                // Each lane's consumer as the broker saw it: what it still
                // holds, what is out unacknowledged, and how far it got.
                const consumers = await jsm.consumers.list(t.streamOf(sender))
                  .next()
                  .then((cs) =>
                    cs.map((c) => ({
                      name: c.name,
                      pending: c.num_pending,
                      ackPending: c.num_ack_pending,
                      waiting: c.num_waiting,
                      delivered: c.delivered.stream_seq,
                      created: c.created,
                    })), (e) => String(e));
                const messages = await jsm.streams.info(t.streamOf(sender))
                  .then((i) => i.state, (e) => String(e));
                console.log(JSON.stringify({
                  sender,
                  messages,
                  consumers,
                  deliveries: await t.at(sender)`
                    select subscriber, type, state, attempts, last_error
                      from queue.deliveries order by id`,
                }));
              }
              throw error;
            });
          assert.ok(order.deliveries.length > 0);
          // The streams are there again, holding this order's messages.
          let messages = 0;
          for (const name of streams) {
            messages += (await jsm.streams.info(name)).state.messages;
          }
          assert.equal(messages, order.deliveries.length);
        } finally {
          await nc.close();
        }
      }, { QUEUE: "jetstream", NATS_URL: TEST_NATS_URL, NATS_STREAM: stream });
    } finally {
      await dropStream(stream);
    }
  },
);

natsTest(
  "jetstream: the workers' look at the lanes makes a deleted stream again, with no publish",
  async () => {
    const name = testStream();
    const stream = await openTestStream(name, ["kitchen"]);
    try {
      await stream.lanes.ensure([{
        subscriber: "kitchen",
        tenantId: crypto.randomUUID(),
      }]);
      assert.equal((await stream.lanes.list()).length, 1);
      assert.equal(await stream.jsm.streams.delete(name), true);
      // The lanes went with the stream; the stream is there again.
      assert.deepEqual(await stream.lanes.list(), []);
      assert.equal((await stream.jsm.streams.info(name)).config.name, name);
    } finally {
      await stream.close();
      await dropStream(name);
    }
  },
);
