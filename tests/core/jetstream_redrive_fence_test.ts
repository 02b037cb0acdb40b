/**
 * The JetStream republisher clears a redrive's mark only for the redrive it
 * published: a second redrive made while the first was on its way to the
 * broker keeps its mark, and is published on the next round.
 */
import assert from "node:assert/strict";
import type { JetStreamClient } from "@nats-io/jetstream";
import { withTestDatabase } from "./_db.ts";
import {
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  RECEIVERS,
  ROUTING,
  SENDER,
} from "./_messaging.ts";
import { natsTest } from "../_nats.ts";
import { openTestTransport } from "./_transport.ts";
import { republishOnce } from "../../lib/carriers/jetstream/republisher.ts";

natsTest(
  "jetstream redrive: a redrive made while the last one was published keeps its mark",
  async () => {
    await withTestDatabase(async (db) => {
      await createTestServices(db.sql);
      const tenantId = await createSandbox(db.sql);
      const tt = await openTestTransport("jetstream", db.sql, {
        routing: ROUTING,
        subscribers: RECEIVERS,
      });
      try {
        const { stream } = tt.broker!;
        const envelope = orderPlacedEnvelope(tenantId, "o-1");
        await tt.queue.publish([{ source: SENDER, envelope }]);
        const mark = () =>
          db.sql<{ redrives: number; marked: boolean }[]>`
          select redrives, republish_at is not null as marked
            from queue.deliveries
           where message_id = ${envelope.messageId}
             and subscriber = ${RECEIVERS[0]}`.then(([r]) => ({ ...r }));
        const redrive = () =>
          db.sql`
          update queue.deliveries
             set redrives = redrives + 1, republish_at = now()
           where message_id = ${envelope.messageId}
             and subscriber = ${RECEIVERS[0]}`;
        const messages = async () =>
          (await stream.jsm.streams.info(stream.names.stream)).state.messages;
        const before = await messages();
        await redrive();

        // The second redrive lands while the first is being published.
        const js = new Proxy(stream.js, {
          get(target, key) {
            if (key !== "publish") return Reflect.get(target, key);
            return async (...args: Parameters<JetStreamClient["publish"]>) => {
              await redrive();
              return await target.publish(...args);
            };
          },
        });
        const options = {
          sql: db.sql,
          names: stream.names,
          lanes: stream.lanes,
        };
        await republishOnce({ ...options, js });
        assert.deepEqual(await mark(), { redrives: 2, marked: true });

        await republishOnce({ ...options, js: stream.js });
        assert.deepEqual(await mark(), { redrives: 2, marked: false });
        // Both redrives reached the broker, each once.
        assert.equal(await messages(), before + 2);
      } finally {
        await tt.close();
      }
    });
  },
);
