/**
 * Leases on both sides of the transport: a relay that dies between publish
 * and mark publishes again once its lease is over, and the transport keeps
 * one copy (the PostgreSQL queue ignores the message id, JetStream's
 * duplicate window the Nats-Msg-Id); a consumer that dies holding a
 * delivery loses it when its lease runs out (the PostgreSQL queue's claim
 * lease, JetStream's AckWait), and its late finish changes nothing.
 */
import assert from "node:assert/strict";
import { placeOrder, RECEIVERS, SENDER } from "./services.ts";
import {
  claimDeliveries,
  count,
  waitFor,
  waitForDeliveries,
  waitForJobs,
} from "./rows.ts";
import { type OpenCarrier, openCarrier } from "./carriers.ts";
import type { Sql } from "../../db/connect.ts";
import { setFault } from "../../faults/mod.ts";
import type { Envelope } from "../../outbox/mod.ts";
import type {
  AttemptResult,
  ClaimedDelivery,
  Queue,
} from "../../ledger/mod.ts";
import { finishDeliveries } from "../../ledger/deliveries_sql.ts";
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import { startDeliveries } from "../../ledger/broker_deliveries_sql.ts";
import { RELAY_FAULTS } from "../../faults/mod.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { LedgerCase, Scenario } from "./harness.ts";

/** The queue, keeping what each publish said was new to it. */
function countingQueue(inner: Queue, fresh: number[]): Queue {
  return {
    publish: async (messages) => {
      const n = await inner.publish(messages);
      fresh.push(n);
      return n;
    },
  };
}

/**
 * A consumer's hold on deliveries, as each transport gives it: a claim of
 * the PostgreSQL queue, or messages fetched from the subscriber's durable
 * consumer and their attempts started, as the broker's consumers do.
 */
interface Hold {
  claimed: ClaimedDelivery[];
  /** Answers the broker for what was held (nothing to do over PostgreSQL). */
  ack(): Promise<void>;
}

async function take(
  t: LedgerCase,
  transport: OpenCarrier,
  owner: string,
  leaseMs: number,
  waitMs = 1000,
): Promise<Hold> {
  if (!transport.broker) {
    const claimed = await claimDeliveries(t.sql, owner, 10, leaseMs);
    return { claimed, ack: async () => {} };
  }
  const { stream } = transport.broker;
  const consumer = await stream.js.consumers.get(
    stream.names.stream,
    stream.names.consumer("t_recv_a", t.tenantId),
  );
  const fetched = await fetchOne(consumer, waitMs);
  const claimed = await startDeliveries(
    t.sql,
    owner,
    leaseMs,
    fetched.map((m) => ({
      subscriber: "t_recv_a",
      envelope: m.json<Envelope>(),
    })),
  );
  return {
    claimed,
    ack: async () => {
      await Promise.all(fetched.map((m) => m.ackAck()));
    },
  };
}

/**
 * Fetches at most one message. One at a time: a fetch for more would wait
 * out its expiry for them. nats.js ends a fetch whose idle heartbeats come
 * late, as they do on a loaded machine, before it took anything; that is
 * asked again rather than failing the scenario.
 */
async function fetchOne(consumer: Consumer, waitMs: number): Promise<JsMsg[]> {
  for (let tries = 1;; tries++) {
    const fetched: JsMsg[] = [];
    try {
      for await (
        const msg of await consumer.fetch({ max_messages: 1, expires: waitMs })
      ) fetched.push(msg);
      return fetched;
    } catch (error) {
      const missed = error instanceof Error &&
        error.message.includes("heartbeats missed");
      if (!missed || fetched.length > 0 || tries === 3) throw error;
    }
  }
}

/** Waits until `old` lost its hold and takes the delivery as `owner`. */
async function takeOver(
  t: LedgerCase,
  transport: OpenCarrier,
  old: Hold,
  owner: string,
): Promise<Hold> {
  const id = old.claimed[0].id;
  if (!transport.broker) {
    await leaseExpired(t.sql, id);
    return await take(t, transport, owner, 60_000);
  }
  // JetStream gives the message again once its AckWait is over.
  let hold: Hold | undefined;
  await waitFor("JetStream to deliver the message again", async () => {
    hold = await take(t, transport, owner, transport.broker!.ackWaitMs);
    return hold.claimed.length > 0;
  });
  return hold!;
}

async function leaseExpired(sql: Sql, id: number) {
  await waitFor(`the lease on delivery ${id} to expire`, async () => {
    const [row] = await sql`
      select lease_expires_at <= clock_timestamp() as expired
        from queue.deliveries where id = ${id}`;
    return row.expired;
  });
}

export const leaseScenarios: Scenario[] = [{
  name:
    "crash between publish and mark: published once, claimed and published again after the lease, the queue ignores the repeat",
  run: async ({ sql, tenantId, view, workers }) => {
    await setFault(sql, tenantId, RELAY_FAULTS.crashBeforeMark, true);
    // Long enough that the row is read within the first lease: with 300 ms
    // a loaded machine read it after the second claim, and compared that
    // lease with itself.
    const relayLeaseMs = 1000;
    const fresh: number[] = [];
    const wrapQueue = (q: Queue) => countingQueue(q, fresh);
    await workers({ relayLeaseMs, wrapQueue }, async ({ messaging, lines }) => {
      const envelope = await placeOrder(sql, tenantId, "O1");
      const crashes = () =>
        lines.filter((l) => l.event === "relay_crash_fault").length;

      await waitFor("the first publish", () => crashes() >= 1);
      const [first] = await sql`
        select state, lease_owner, lease_expires_at from t_sender.outbox`;
      assert.equal(first.state, "claimed");
      assert.equal(first.lease_owner, messaging.owner);
      assert.equal(await count(sql, "queue.messages"), 1);

      // After the lease runs out the row is claimed and published again.
      await waitFor("a second claim and publish", () => crashes() >= 2);
      const [second] = await sql`
        select state, lease_expires_at from t_sender.outbox`;
      assert.equal(second.state, "claimed");
      assert.ok(
        second.lease_expires_at.getTime() >=
          first.lease_expires_at.getTime() + relayLeaseMs,
        "the second lease starts after the first expired",
      );
      // The repeat was ignored: one message, one delivery per receiver, and
      // the transport said the second publish had nothing new (over
      // JetStream: every PubAck of the same Nats-Msg-Id said duplicate).
      const [message] = await sql`select message_id from queue.messages`;
      assert.equal(message.message_id, envelope.messageId);
      assert.equal(await count(sql, "queue.messages"), 1);
      assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);
      assert.deepEqual(fresh.slice(0, 2), [1, 0]);

      await setFault(sql, tenantId, RELAY_FAULTS.crashBeforeMark, false);
      // Published at last: owed no more, so the row is gone.
      await waitFor(
        "the row published",
        async () => await count(sql, "t_sender.outbox") === 0,
      );
      // A crash is not a failed publish: nothing was parked or counted as
      // one, and no publish failed.
      assert.equal(
        lines.filter((l) => l.event === "relay_error").length,
        0,
      );

      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", RECEIVERS.length);
      assert.equal(await count(sql, "queue.messages"), 1);
      assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.inbox`), 1, r);
      }
      // Over JetStream: published two or three times, stored once per
      // receiver, and each copy delivered once.
      if (view) {
        assert.ok(fresh.length >= 2, `${fresh.length} publishes`);
        assert.deepEqual(fresh.slice(1), fresh.slice(1).map(() => 0));
        await assertStreamHolds(view, toEach([envelope.messageId], RECEIVERS));
        await assertDelivered(view, { t_recv_a: 1, t_recv_b: 1, t_recv_c: 1 });
      }
    });
  },
}, {
  name:
    "deliveries: an expired lease is taken over, even by the same process; the old claim's late finish changes nothing",
  run: async (t) => {
    const { sql, tenantId } = t;
    const envelope = await placeOrder(sql, tenantId, "O1");
    // A short lease, but one that outlasts the look that finds the delivery
    // held (with 50 ms a loaded machine let it run out first); over
    // JetStream the AckWait, which must outlast a fetch that finds nothing
    // (1 s at least).
    const transport = await openCarrier(t.carrier, sql, {
      routing: { OrderPlaced: ["t_recv_a"] },
      subscribers: RECEIVERS,
      jetStream: t.harness.jetStream,
      stream: t.stream,
      ackWaitMs: 3000,
    });
    try {
      await transport.queue.publish([{ source: SENDER, envelope }]);
      const leaseMs = transport.broker?.ackWaitMs ?? 1000;

      // One process, two claims: a lease belongs to a claim, so the first
      // claim's result cannot finish the second.
      const old = await take(t, transport, "worker", leaseMs, 5000);
      assert.equal(old.claimed.length, 1);
      assert.equal(old.claimed[0].attempt, 1);
      assert.deepEqual(old.claimed[0].envelope, envelope);
      // While the lease holds, nobody else gets the delivery.
      assert.deepEqual(
        (await take(t, transport, "worker", 60_000)).claimed,
        [],
      );

      const taken = await takeOver(t, transport, old, "worker");
      assert.notEqual(taken.claimed[0].lease, old.claimed[0].lease);
      assert.deepEqual(taken.claimed.map((d) => d.id), [old.claimed[0].id]);
      assert.equal(taken.claimed[0].attempt, 2);

      const result = (hold: Hold, attempt: number): AttemptResult => ({
        id: old.claimed[0].id,
        lease: hold.claimed[0].lease,
        state: "done",
        attempt,
        status: 200,
        error: null,
        delayMs: 0,
        startedAt: new Date(),
        durationMs: 1,
      });
      assert.equal(await finishDeliveries(sql, [result(old, 1)]), 0);
      const [row] = await sql`
        select state, lease_owner, attempts from queue.deliveries`;
      assert.deepEqual({ ...row }, {
        state: "in_flight",
        lease_owner: taken.claimed[0].lease,
        attempts: 2,
      });
      // The stale finish left no attempt behind either.
      assert.equal(await count(sql, "queue.attempt_log"), 0);

      assert.equal(await finishDeliveries(sql, [result(taken, 2)]), 1);
      await taken.ack();
      const [done] = await sql`
        select state, lease_owner, done_at from queue.deliveries`;
      assert.equal(done.state, "done");
      assert.equal(done.lease_owner, null);
      assert.ok(done.done_at instanceof Date);
      const attempts =
        await sql`select attempt, outcome from queue.attempt_log`;
      assert.deepEqual([...attempts], [{ attempt: 2, outcome: "done" }]);
      // Done is final.
      assert.equal(await finishDeliveries(sql, [result(taken, 2)]), 0);
      assert.deepEqual((await take(t, transport, "worker", 50)).claimed, []);
      // Over JetStream: one message, delivered twice (the second time
      // because its AckWait ran out), and acknowledged.
      if (t.view) {
        await assertStreamHolds(
          t.view,
          toEach([envelope.messageId], [
            "t_recv_a",
          ]),
        );
        await assertDelivered(t.view, { t_recv_a: 2 });
      }
    } finally {
      await transport.close();
    }
  },
}];
