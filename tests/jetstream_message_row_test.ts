/**
 * Over JetStream, a delivery always has its message. The relay stores its
 * rows after the PubAcks, so a consumer may take a message first; when the
 * relay dies in between, the consumer's rows are all there is. They hold
 * the message row too, so that a redrive of that delivery has an envelope
 * to publish; and a mark that has none anyway (a delivery made before the
 * consumers wrote it) waits behind the others instead of spinning the
 * republisher.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { setFault } from "../lib/faults/mod.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { Ledger, redrive } from "../lib/ledger/mod.ts";
import { JetStreamQueue } from "../lib/carriers/jetstream/mod.ts";
import { republishOnce } from "../lib/carriers/jetstream/republisher.ts";
import type { JetStream } from "../lib/carriers/jetstream/stream.ts";
import { withTestDatabase } from "./core/_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  receiverFault,
  RECEIVERS,
  ROUTING,
  SENDER,
  waitFor,
  withWorkers,
} from "./core/_messaging.ts";
import { openTestTransport } from "./core/_transport.ts";
import { natsTest } from "./_nats.ts";

/** The relay's ledger, as a relay that dies after its PubAcks leaves it. */
class DiesBeforeStore extends Ledger {
  override store(): Promise<number> {
    return Promise.reject(
      new Error("the relay died between its PubAcks and its store"),
    );
  }
}

async function stateOf(sql: Sql, messageId: string, subscriber: string) {
  const [row] = await sql<{ state: string; redrives: number }[]>`
    select state, redrives from queue.deliveries
     where message_id = ${messageId} and subscriber = ${subscriber}`;
  return row ? { ...row } : undefined;
}

const marks = async (sql: Sql) =>
  await count(sql, "queue.deliveries", sql`republish_at is not null`);

const republish = (sql: Sql, stream: JetStream) =>
  republishOnce({
    sql,
    js: stream.js,
    names: stream.names,
    lanes: stream.lanes,
  });

natsTest(
  "jetstream: the consumer first, the relay dead before its store: the message row is there, a redrive is published and applied once",
  async () => {
    await withTestDatabase(async (db) => {
      await createTestServices(db.sql);
      const tenantId = await createSandbox(db.sql);
      const refuses = receiverFault("t_recv_a", "Refuses");
      await setFault(db.sql, tenantId, refuses, true);
      // No relay runs: the one that published is dead, and nobody
      // publishes or stores its messages again.
      await withWorkers(
        db,
        { transport: "jetstream", senders: [] },
        async ({ messaging, lines }) => {
          const { stream } = messaging.transport.broker!;
          const view = messaging.transport.view!;
          const relay = new JetStreamQueue({
            js: stream.js,
            names: stream.names,
            lanes: stream.lanes,
            routing: ROUTING,
            ledger: new DiesBeforeStore(db.sql, ROUTING),
          });
          const envelope = orderPlacedEnvelope(tenantId, "O1");
          const { messageId } = envelope;
          await assert.rejects(
            relay.publish([{ source: SENDER, envelope }]),
            /died between its PubAcks and its store/,
          );
          await waitFor(
            "t_recv_a's delivery dead",
            async () =>
              (await stateOf(db.sql, messageId, "t_recv_a"))?.state === "dead",
          );
          for (const r of ["t_recv_b", "t_recv_c"]) {
            await waitFor(
              `${r}'s delivery done`,
              async () =>
                (await stateOf(db.sql, messageId, r))?.state === "done",
            );
          }

          // The row the relay's store would have written.
          const rows = await db.sql`
            select message_id, tenant_id, source, type, aggregate_id,
                   envelope
              from queue.messages`;
          assert.deepEqual(rows.map((r) => ({ ...r })), [{
            message_id: messageId,
            tenant_id: tenantId,
            source: SENDER,
            type: "OrderPlaced",
            aggregate_id: "O1",
            envelope: JSON.parse(JSON.stringify(envelope)),
          }]);

          await setFault(db.sql, tenantId, refuses, false);
          const redriven = await redrive(
            db.sql,
            tenantId,
            { subscriber: "t_recv_a" },
            "operator@test",
            messaging.transport.redrive,
          );
          assert.equal(redriven.length, 1);
          await waitFor(
            "the redriven delivery done",
            async () =>
              (await stateOf(db.sql, messageId, "t_recv_a"))?.state === "done",
          );
          assert.deepEqual(await stateOf(db.sql, messageId, "t_recv_a"), {
            state: "done",
            redrives: 1,
          });
          for (const r of RECEIVERS) {
            assert.equal(
              await count(
                db.sql,
                `${r}.inbox`,
                db.sql`message_id = ${messageId}`,
              ),
              1,
              `${r}'s inbox`,
            );
            assert.equal(await count(db.sql, `${r}.jobs`), 1, `${r}'s jobs`);
          }
          // One copy per receiver, and the redrive's one more.
          assert.equal(await view.count(), RECEIVERS.length + 1);

          // Idle: no mark left, and a round finds nothing due, now or later.
          await waitFor("no mark left", async () => await marks(db.sql) === 0);
          const idle = await republish(db.sql, stream);
          assert.equal(idle.more, false);
          assert.equal(idle.nextDueAt, undefined);
          assert.equal(
            lines.filter((l) => l.event === "broker_republish_without_message")
              .length,
            0,
          );
        },
      );
    });
  },
);

natsTest(
  "jetstream: a mark whose message has no row waits behind the others, and the republisher does not go round for it",
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
        const lost = orderPlacedEnvelope(tenantId, "O1");
        const kept = orderPlacedEnvelope(tenantId, "O2");
        await tt.queue.publish([
          { source: SENDER, envelope: lost },
          { source: SENDER, envelope: kept },
        ]);
        const before = await tt.view!.count();
        // What a consumer left before it wrote message rows: a delivery
        // alone. Its mark is the older, first in line.
        await db.sql`
          delete from queue.messages where message_id = ${lost.messageId}`;
        const mark = (messageId: string, ago: number) =>
          db.sql`
            update queue.deliveries
               set redrives = redrives + 1,
                   republish_at = now() - ${ago} * interval '1 second'
             where message_id = ${messageId} and subscriber = 't_recv_a'`;
        await mark(lost.messageId, 2);
        await mark(kept.messageId, 1);
        const { logger, lines } = memoryLogger("info");
        const round = () =>
          republishOnce({
            sql: db.sql,
            js: stream.js,
            names: stream.names,
            lanes: stream.lanes,
            batch: 1,
            log: logger,
          });
        const markOf = async (messageId: string) => {
          const [row] = await db.sql<{ at: Date | null; due: boolean }[]>`
            select republish_at as at, republish_at <= now() as due
              from queue.deliveries
             where message_id = ${messageId} and subscriber = 't_recv_a'`;
          return row;
        };

        // The first round takes the mark it cannot publish and leaves it
        // under its lease, saying why; the batch was full, so it goes on.
        assert.deepEqual(await round(), { more: true });
        assert.equal((await markOf(lost.messageId)).due, false);
        assert.deepEqual(
          lines.filter((l) => l.event === "broker_republish_without_message")
            .map((l) => l.reason),
          [
            "the message has no row in queue.messages: its envelope is not stored",
          ],
        );
        // The next publishes the other, and clears its mark.
        const second = await round();
        assert.equal(second.more, true);
        assert.equal((await markOf(kept.messageId)).at, null);
        assert.equal(await tt.view!.count(), before + 1);
        // Then nothing is due: the loop sleeps until the lease runs out.
        const third = await round();
        assert.equal(third.more, false);
        assert.deepEqual(third.nextDueAt, (await markOf(lost.messageId)).at);
        assert.ok(third.nextDueAt!.getTime() > Date.now());
        assert.equal(await tt.view!.count(), before + 1);
      } finally {
        await tt.close();
      }
    });
  },
);
