/**
 * The whole bakery over JetStream (QUEUE=jetstream): a paid order reaches
 * its receivers through the broker, recorded in PostgreSQL as over the
 * PostgreSQL queue, and the stream holds one message per delivery.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { orderSettles, payVia, placeOrderVia, withTestBakery } from "./_app.ts";
import { dropStream, natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";
import { ROUTING, SENDERS } from "../services/routing.ts";

natsTest(
  "over JetStream a paid order reaches all its receivers once",
  async () => {
    const stream = testStream();
    try {
      await withTestBakery(async (t) => {
        const health = await fetch(new URL("/health", t.url));
        assert.deepEqual(await health.json(), {
          status: "ok",
          database: "up",
          queue: "jetstream",
          broker: "up",
          // One server on its own: no cluster name, no other servers.
          cluster: {
            server: new URL(TEST_NATS_URL).host,
            name: null,
            servers: [],
            replicas: 1,
          },
        });
        const client = t.client();
        const { orderId } = await placeOrderVia(client);
        await payVia(client, orderId);
        const order = await orderSettles(client, orderId, "paid");
        const owed = order.messages.reduce(
          (n, m) => n + (ROUTING[m.eventType]?.length ?? 0),
          0,
        );
        assert.equal(order.deliveries.length, owed);
        const nc = await connect({ servers: TEST_NATS_URL });
        try {
          // The one stream, or split, each sender's: together one message
          // per delivery.
          const jsm = await jetstreamManager(nc);
          let messages = 0;
          for (const name of new Set(SENDERS.map((s) => t.streamOf(s)))) {
            messages += (await jsm.streams.info(name)).state.messages;
          }
          assert.equal(messages, owed);
        } finally {
          await nc.close();
        }
      }, { QUEUE: "jetstream", NATS_URL: TEST_NATS_URL, NATS_STREAM: stream });
    } finally {
      await dropStream(stream);
    }
  },
);
