/**
 * The lanes of the JetStream transport (lib/carriers/jetstream/lanes.ts): a
 * durable consumer per subscriber and sandbox, which the server drops after
 * its inactive threshold. A lane dropped while it still had an open
 * delivery (no worker fetched it for that long) is made again by the
 * workers' look at the open deliveries, and gives its messages once more:
 * the open one is sent, the settled one only acknowledged. And the one
 * durable per subscriber of the transport before the lanes goes when it has
 * nothing open.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  RECEIVERS,
  SENDER,
  startTestWorkers,
  waitFor,
  waitForJobs,
} from "./_messaging.ts";
import { dropStream, natsTest, TEST_NATS_URL, testStream } from "../_nats.ts";
import { openTestStream, openTestTransport } from "./_transport.ts";
import { StreamNames } from "../../lib/carriers/jetstream/mod.ts";
import { assertDelivered } from "../../lib/carriers/conformance/broker.ts";

natsTest(
  "jetstream: a lane dropped with an open delivery is made again by the workers; the open message is sent, the settled one only acknowledged",
  async () => {
    await withTestDatabase(async (db) => {
      const { sql } = db;
      await createTestServices(sql);
      const tenantId = await createSandbox(sql);
      const stream = testStream();
      try {
        // O1 goes through: its lanes are made, it is done everywhere.
        const first = startTestWorkers(db, { transport: "jetstream", stream });
        const workers = await first.messaging;
        try {
          await placeOrder(sql, tenantId, "O1");
          await waitForJobs(sql, 1);
        } finally {
          await workers.stop();
        }
        // O2 is published with no worker running, then its lanes are gone,
        // as the server drops a lane nobody fetched for its threshold.
        const transport = await openTestTransport("jetstream", sql, {
          routing: { OrderPlaced: [...RECEIVERS] },
          subscribers: RECEIVERS,
          stream,
        });
        try {
          const o2 = await placeOrder(sql, tenantId, "O2");
          await transport.queue.publish([{ source: SENDER, envelope: o2 }]);
          const { jsm, names } = transport.broker!.stream;
          for (const r of RECEIVERS) {
            await jsm.consumers.delete(
              names.stream,
              names.consumer(r, tenantId),
            );
          }
        } finally {
          await transport.close();
        }
        assert.equal(
          await count(sql, "queue.deliveries", sql`state = 'pending'`),
          3,
        );
        // Consumers only: no relay to make the lanes again on its publish,
        // no bell; only the look at the open deliveries finds them.
        const second = startTestWorkers(db, {
          transport: "jetstream",
          stream,
          roles: { relay: false },
        });
        const again = await second.messaging;
        try {
          await waitForJobs(sql, 2);
          await waitFor(
            "every delivery done",
            async () =>
              await count(sql, "queue.deliveries", sql`state <> 'done'`) === 0,
          );
          assert.ok(
            second.lines.some((l) => l.event === "broker_lanes_made_again"),
          );
          // Each lane gave O1 and O2 again; O1 was only acknowledged.
          await assertDelivered(again.transport.view!, {
            t_recv_a: 2,
            t_recv_b: 2,
            t_recv_c: 2,
          });
          assert.equal(await count(sql, "queue.attempt_log"), 6);
          for (const r of RECEIVERS) {
            assert.equal(await count(sql, `${r}.inbox`), 2);
          }
        } finally {
          await again.stop();
        }
      } finally {
        await dropStream(stream);
      }
    });
  },
);

natsTest(
  "jetstream: the durable per subscriber of before the lanes is deleted when it has nothing open",
  async () => {
    const stream = testStream();
    const names = new StreamNames(stream);
    try {
      // The stream as the transport made it before the lanes.
      await (await openTestStream(stream, [])).close();
      const nc = await connect({ servers: TEST_NATS_URL });
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.consumers.add(stream, {
          durable_name: "t_recv_a",
          filter_subject: names.filter("t_recv_a"),
          ack_policy: AckPolicy.Explicit,
        });
        const opened = await openTestStream(stream, RECEIVERS);
        await opened.close();
        const left: string[] = [];
        for await (const c of jsm.consumers.list(stream)) left.push(c.name);
        assert.deepEqual(left, []);
      } finally {
        await nc.close();
      }
    } finally {
      await dropStream(stream);
    }
  },
);
