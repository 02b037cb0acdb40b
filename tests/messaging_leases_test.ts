/**
 * Leases: a relay that dies between publish and mark causes a duplicate that
 * the queue ignores, never a loss; an expired lease is taken over, and the
 * old owner's late finish changes nothing.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  RECEIVERS,
  ROUTING,
  SENDER,
  waitFor,
  waitForDeliveries,
  waitForJobs,
  withWorkers,
} from "./_messaging.ts";
import type { Sql } from "../lib/db/connect.ts";
import { setFault } from "../lib/faults/mod.ts";
import { claimOutbox, markPublished, RELAY_FAULTS } from "../lib/relay/mod.ts";
import { PgQueue } from "../lib/queue/mod.ts";
import {
  type AttemptResult,
  claimDeliveries,
  finishDeliveries,
} from "../lib/queue/deliveries_sql.ts";

Deno.test("crash between publish and mark: published once, claimed and published again after the lease, the queue ignores the repeat", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    await setFault(sql, sandboxId, RELAY_FAULTS.crashBeforeMark, true);
    const relayLeaseMs = 300;
    await withWorkers(db, { relayLeaseMs }, async ({ messaging, lines }) => {
      const envelope = await placeOrder(sql, sandboxId, "O1");
      const crashes = () =>
        lines.filter((l) => l.event === "relay_crash_fault").length;

      await waitFor("the first publish", () => crashes() >= 1);
      const [first] = await sql`
        select state, lease_owner, lease_expires_at, published_at
          from t_sender.outbox`;
      assert.equal(first.state, "claimed");
      assert.equal(first.lease_owner, messaging.owner);
      assert.equal(first.published_at, null);
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
      // The repeat was ignored: one message, one delivery per receiver.
      const [message] = await sql`select message_id from queue.messages`;
      assert.equal(message.message_id, envelope.messageId);
      assert.equal(await count(sql, "queue.messages"), 1);
      assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);

      await setFault(sql, sandboxId, RELAY_FAULTS.crashBeforeMark, false);
      await waitFor("the row published", async () => {
        const [row] = await sql`select state from t_sender.outbox`;
        return row.state === "published";
      });
      const [done] = await sql`
        select lease_owner, lease_expires_at, published_at, attempts
          from t_sender.outbox`;
      assert.equal(done.lease_owner, null);
      assert.equal(done.lease_expires_at, null);
      assert.ok(done.published_at instanceof Date);
      // A crash is not a failed publish: no attempt counted.
      assert.equal(done.attempts, 0);

      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", RECEIVERS.length);
      assert.equal(await count(sql, "queue.messages"), 1);
      assert.equal(await count(sql, "queue.deliveries"), RECEIVERS.length);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.inbox`), 1, r);
      }
    });
  });
});

async function leaseExpired(sql: Sql, table: string, id: number) {
  await waitFor(`the lease on ${table} ${id} to expire`, async () => {
    const [row] = await sql`
      select lease_expires_at <= clock_timestamp() as expired
        from ${sql(table)} where id = ${id}`;
    return row.expired;
  });
}

Deno.test("outbox: an expired lease is taken over; the old owner's late mark changes nothing", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    await placeOrder(sql, sandboxId, "O1");

    const old = await claimOutbox(sql, SENDER, "old", 10, 50);
    assert.equal(old.length, 1);
    // While the lease holds, nobody else gets the row.
    assert.deepEqual(await claimOutbox(sql, SENDER, "new", 10, 60_000), []);

    await leaseExpired(sql, `${SENDER}.outbox`, old[0].id);
    const taken = await claimOutbox(sql, SENDER, "new", 10, 60_000);
    assert.deepEqual(taken.map((r) => r.id), [old[0].id]);

    assert.equal(await markPublished(sql, SENDER, "old", [old[0].id]), 0);
    const [row] = await sql`select state, lease_owner from t_sender.outbox`;
    assert.equal(row.state, "claimed");
    assert.equal(row.lease_owner, "new");

    assert.equal(await markPublished(sql, SENDER, "new", [old[0].id]), 1);
    const [after] = await sql`select state, lease_owner from t_sender.outbox`;
    assert.equal(after.state, "published");
    assert.equal(after.lease_owner, null);
    // Published is final: a late mark by anyone changes nothing.
    assert.equal(await markPublished(sql, SENDER, "new", [old[0].id]), 0);
    assert.deepEqual(await claimOutbox(sql, SENDER, "new", 10, 50), []);
  });
});

Deno.test("deliveries: an expired lease is taken over; the old owner's late finish changes nothing", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    const envelope = await placeOrder(sql, sandboxId, "O1");
    await new PgQueue(sql, { OrderPlaced: ["t_recv_a"] }).publish([
      { source: SENDER, envelope },
    ]);

    const old = await claimDeliveries(sql, "old", 10, 50);
    assert.equal(old.length, 1);
    assert.equal(old[0].attempt, 1);
    assert.deepEqual(old[0].envelope, envelope);
    assert.deepEqual(await claimDeliveries(sql, "new", 10, 60_000), []);

    await leaseExpired(sql, "queue.deliveries", old[0].id);
    const taken = await claimDeliveries(sql, "new", 10, 60_000);
    assert.deepEqual(taken.map((d) => d.id), [old[0].id]);
    assert.equal(taken[0].attempt, 2);

    const result = (attempt: number): AttemptResult => ({
      id: old[0].id,
      state: "done",
      attempt,
      status: 200,
      error: null,
      delayMs: 0,
      startedAt: new Date(),
      durationMs: 1,
    });
    assert.equal(await finishDeliveries(sql, "old", [result(1)]), 0);
    const [row] = await sql`
      select state, lease_owner, attempts from queue.deliveries`;
    assert.deepEqual({ ...row }, {
      state: "in_flight",
      lease_owner: "new",
      attempts: 2,
    });
    // The stale finish left no attempt behind either.
    assert.equal(await count(sql, "queue.attempts"), 0);

    assert.equal(await finishDeliveries(sql, "new", [result(2)]), 1);
    const [done] = await sql`
      select state, lease_owner, done_at from queue.deliveries`;
    assert.equal(done.state, "done");
    assert.equal(done.lease_owner, null);
    assert.ok(done.done_at instanceof Date);
    const attempts = await sql`select attempt, outcome from queue.attempts`;
    assert.deepEqual([...attempts], [{ attempt: 2, outcome: "done" }]);
    // Done is final.
    assert.equal(await finishDeliveries(sql, "new", [result(2)]), 0);
    assert.deepEqual(await claimDeliveries(sql, "new", 10, 50), []);
  });
});

Deno.test("concurrent claims never hand one row to two owners", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const sandboxId = await createSandbox(sql);
    for (const id of ["O1", "O2", "O3"]) await placeOrder(sql, sandboxId, id);
    const queue = new PgQueue(sql, ROUTING);
    const rows = await sql`select envelope from t_sender.outbox order by id`;
    await queue.publish(
      rows.map((r) => ({ source: SENDER, envelope: r.envelope })),
    );

    // Two relays claiming at once share the three rows without overlap.
    const relays = ["a", "b"];
    const outbox = await Promise.all(
      relays.map((o) => claimOutbox(sql, SENDER, o, 2, 60_000)),
    );
    const outboxIds = outbox.flat().map((r) => r.id);
    assert.equal(outboxIds.length, 3);
    assert.equal(new Set(outboxIds).size, 3);
    for (const [i, owner] of relays.entries()) {
      const held = await sql`
        select id from t_sender.outbox where lease_owner = ${owner} order by id`;
      assert.deepEqual(
        held.map((r) => Number(r.id)),
        outbox[i].map((r) => r.id),
      );
    }

    // Four consumers at once over the nine deliveries.
    const consumers = ["c1", "c2", "c3", "c4"];
    const claims = await Promise.all(
      consumers.map((o) => claimDeliveries(sql, o, 3, 60_000)),
    );
    const ids = claims.flat().map((d) => d.id);
    assert.equal(ids.length, 9);
    assert.equal(new Set(ids).size, 9);
    for (const [i, owner] of consumers.entries()) {
      const held = await sql`
        select id from queue.deliveries where lease_owner = ${owner} order by id`;
      assert.deepEqual(
        held.map((r) => Number(r.id)),
        claims[i].map((d) => d.id),
      );
    }
  });
});
