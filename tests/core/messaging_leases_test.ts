/**
 * Leases of the relay's and the PostgreSQL queue's claims: an expired lease
 * on an outbox row is taken over and the old owner's late mark changes
 * nothing; concurrent claims never share a row. A relay that dies between
 * publish and mark, and a consumer whose lease runs out, are the
 * conformance suite's (tests/core/messaging_conformance_test.ts), on both
 * transports.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  claimDeliveries,
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  ROUTING,
  SENDER,
  waitFor,
} from "./_messaging.ts";
import type { Sql } from "../../lib/db/connect.ts";
import { claimOutbox, markPublished } from "../../lib/outbox/mod.ts";
import { Ledger } from "../../lib/ledger/mod.ts";

/** One claim of the test sender's outbox by `owner`: the rows it took. */
async function claimRows(
  sql: Sql,
  owner: string,
  limit: number,
  leaseMs: number,
) {
  return (await claimOutbox(sql, SENDER, { owner, limit, leaseMs })).rows;
}

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
    const tenantId = await createSandbox(sql);
    await placeOrder(sql, tenantId, "O1");

    // A second: long enough to hold through the next claim on a loaded
    // machine, short enough to wait out.
    const old = await claimRows(sql, "old", 10, 1_000);
    assert.equal(old.length, 1);
    // While the lease holds, nobody else gets the row.
    assert.deepEqual(await claimRows(sql, "new", 10, 60_000), []);

    await leaseExpired(sql, `${SENDER}.outbox`, old[0].id);
    const taken = await claimRows(sql, "new", 10, 60_000);
    assert.deepEqual(taken.map((r) => r.id), [old[0].id]);

    const id = old[0].envelope.messageId;
    assert.equal(await markPublished(sql, SENDER, "old", [id]), 0);
    const [row] = await sql`select state, lease_owner from t_sender.outbox`;
    assert.equal(row.state, "claimed");
    assert.equal(row.lease_owner, "new");

    assert.equal(await markPublished(sql, SENDER, "new", [id]), 1);
    // Published: owed no more, the row is gone.
    assert.equal(await count(sql, "t_sender.outbox"), 0);
    // Final: a late mark by anyone changes nothing.
    assert.equal(await markPublished(sql, SENDER, "new", [id]), 0);
    assert.deepEqual(await claimRows(sql, "new", 10, 50), []);
  });
});

Deno.test("concurrent claims never hand one row to two owners", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    for (const id of ["O1", "O2", "O3"]) await placeOrder(sql, tenantId, id);
    const queue = new Ledger(sql, ROUTING);
    const rows = await sql`select envelope from t_sender.outbox order by id`;
    await queue.publish(
      rows.map((r) => ({ source: SENDER, envelope: r.envelope })),
    );

    // Two relays claiming at once share the three rows without overlap.
    const relays = ["a", "b"];
    const outbox = await Promise.all(
      relays.map((o) => claimRows(sql, o, 2, 60_000)),
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
        select id from queue.deliveries
         where lease_owner like ${`${owner}#%`} order by id`;
      assert.deepEqual(
        held.map((r) => Number(r.id)),
        claims[i].map((d) => d.id),
      );
    }
  });
});
