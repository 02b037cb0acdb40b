/**
 * The PostgreSQL queue's claim (lib/ledger/deliveries_sql.ts):
 * round-robin across the sandboxes of its round, one lane of each where the
 * lane has enough (so that it travels as a batch), a full batch when there is
 * work enough, and no row locked that the batch does not take. A row lock
 * is a write of the row, and a lock left behind by a committed claim stays
 * visible as the row's xmax: a pending delivery with an xmax was locked by
 * a claim that did not take it.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../lib/db/connect.ts";
import { FairShare } from "../../lib/delivery/fair_share.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import { claimBatch } from "../../lib/ledger/deliveries_sql.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { withTestDatabase } from "./_db.ts";
import {
  claimDeliveries,
  createSandbox,
  createTestServices,
  placeOrders,
  ROUTING,
  SENDER,
} from "./_messaging.ts";

async function sandboxWithOrders(
  sql: Sql,
  name: string,
  orders: number,
): Promise<string> {
  const id = await createSandbox(sql, name);
  await placeOrders(
    sql,
    id,
    Array.from({ length: orders }, (_, i) => `${name}-${i}`),
  );
  return id;
}

async function claimTen(sql: Sql) {
  return (await claimBatch(sql, "consumer-1", {
    limit: 10,
    leaseMs: 60_000,
    round: { after: null, perTenant: 100 },
  })).claimed;
}

/** Pending deliveries a claim locked and left. */
async function lockedAndLeft(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from queue.deliveries
     where state = 'pending' and xmax::text <> '0'`;
  return row.n;
}

function perTenant(claimed: { tenantId: string }[]) {
  const counts = new Map<string, number>();
  for (const d of claimed) {
    counts.set(d.tenantId, (counts.get(d.tenantId) ?? 0) + 1);
  }
  return counts;
}

Deno.test("a claim takes round-robin from each sandbox, a lane at a time, and locks only the rows it takes", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    // Three deliveries an order: 12, 3 and 3 due.
    const big = await sandboxWithOrders(sql, "big", 4);
    const one = await sandboxWithOrders(sql, "one", 1);
    const two = await sandboxWithOrders(sql, "two", 1);
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);

    const claimed = await claimTen(sql);
    const counts = perTenant(claimed);
    assert.equal(claimed.length, 10);
    assert.equal(counts.get(one), 3);
    assert.equal(counts.get(two), 3);
    assert.equal(counts.get(big), 4);
    // `big` gives one lane, its oldest first, so that they travel as one
    // batch; `one` and `two`, whose lanes hold one each, give every lane.
    const fromBig = claimed.filter((d) => d.tenantId === big);
    assert.equal(new Set(fromBig.map((d) => d.subscriber)).size, 1);
    const [oldest] = await sql<{ ids: number[] }[]>`
      select array_agg(id order by id) as ids from (
        select id from queue.deliveries
         where tenant_id = ${big} and subscriber = ${fromBig[0].subscriber}
         order by id limit 4) x`;
    assert.deepEqual(fromBig.map((d) => d.id), oldest.ids.map(Number));
    const [first] = await sql<{ subscriber: string }[]>`
      select subscriber from queue.deliveries where tenant_id = ${big}
       order by id limit 1`;
    assert.equal(fromBig[0].subscriber, first.subscriber);
    assert.equal(
      new Set(
        claimed.filter((d) => d.tenantId === one).map((d) => d.subscriber),
      ).size,
      3,
    );
    assert.equal(await lockedAndLeft(sql), 0);
  });
});

Deno.test("a claim fills its batch from a sandbox with more when the others of its round have nothing due", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const move = new PgMove(new Ledger(sql, ROUTING));
    // Three sandboxes whose deliveries are all in flight (open, not due),
    // then one with a backlog of 30.
    for (const name of ["a", "b", "c"]) await sandboxWithOrders(sql, name, 1);
    await move.move(SENDER, 100);
    assert.equal(
      (await claimDeliveries(sql, "consumer-0", 100, 60_000)).length,
      9,
    );
    const backlog = await sandboxWithOrders(sql, "backlog", 10);
    await move.move(SENDER, 100);

    const claimed = await claimTen(sql);
    assert.equal(claimed.length, 10);
    assert.deepEqual([...perTenant(claimed).keys()], [backlog]);
    assert.equal(await lockedAndLeft(sql), 0);
    // And the rest, a batch at a time.
    assert.equal((await claimTen(sql)).length, 10);
    assert.equal((await claimTen(sql)).length, 10);
    assert.equal((await claimTen(sql)).length, 0);
  });
});

Deno.test("a lane gives a claim no more than its share; the sandbox's other lanes fill the rest", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    // Ten orders: three lanes of ten due deliveries each.
    const id = await sandboxWithOrders(sql, "busy", 10);
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);
    const [first] = await sql<{ subscriber: string }[]>`
      select subscriber from queue.deliveries where tenant_id = ${id}
       order by id limit 1`;

    const { claimed } = await claimBatch(sql, "consumer-1", {
      limit: 100,
      leaseMs: 60_000,
      round: { after: null, perTenant: 12, perLane: 4 },
    });
    // The sandbox's share, no more; the oldest lane its own share, and the
    // other lanes the rest, so that a slow lane cannot take it all.
    assert.equal(claimed.length, 12);
    const lanes = new Map<string, number>();
    for (const d of claimed) {
      lanes.set(d.subscriber, (lanes.get(d.subscriber) ?? 0) + 1);
    }
    assert.equal(lanes.get(first.subscriber), 4);
    assert.equal(lanes.size, 3);
    assert.equal(await lockedAndLeft(sql), 0);
  });
});

Deno.test("claims of one process at once take turns: together they keep the sandbox's share", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    await sandboxWithOrders(sql, "busy", 10);
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);
    const share = new FairShare({
      perTenant: 12,
      perLane: 4,
      maxDetached: 0,
      stragglerMs: 250,
    });
    // Four consumers of one process claim at the same moment. Each claim
    // must read what the ones before it hold, or each would take a share.
    const claims = await Promise.all(
      Array.from(
        { length: 4 },
        (_, i) =>
          share.claiming(() =>
            claimBatch(sql, `consumer-${i}`, {
              limit: 100,
              leaseMs: 60_000,
              round: {
                after: null,
                perTenant: share.perTenant,
                perLane: share.perLane,
                held: share.held(),
                closed: share.closed(),
              },
            })
          ),
      ),
    );
    const claimed = claims.flatMap((c) => c.claimed);
    assert.equal(claimed.length, 12);
    const lanes = new Map<string, number>();
    for (const d of claimed) {
      lanes.set(d.subscriber, (lanes.get(d.subscriber) ?? 0) + 1);
    }
    assert.deepEqual([...lanes.values()], [4, 4, 4]);
    assert.equal(share.held().counts.reduce((a, b) => a + b, 0), 12);
  });
});

Deno.test("an empty claim gives the next due time of the sandboxes the process may take more of", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const move = new PgMove(new Ledger(sql, ROUTING));
    // Eleven sandboxes, one more than a round visits: each with an order's
    // three deliveries, due in 1 to 11 hours; `first`'s are due now.
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      ids.push(await sandboxWithOrders(sql, `s${i}`, 1));
    }
    await move.move(SENDER, 100);
    for (const [i, id] of ids.entries()) {
      await sql`update queue.deliveries
                   set next_attempt_at = now() + ${i} * interval '1 hour'
                 where tenant_id = ${id}`;
    }
    const [first, second] = ids;
    const dueAt = async (held: string[]) => {
      const batch = await claimBatch(sql, "consumer-1", {
        limit: 10,
        leaseMs: 60_000,
        round: {
          after: null,
          perTenant: 3,
          held: {
            tenantIds: held,
            subscribers: held.map(() => "kitchen"),
            counts: held.map(() => 3),
          },
        },
      });
      assert.equal(batch.claimed.length, 0);
      return batch.nextDueAt;
    };
    const hoursAway = (at: Date | null) =>
      at && Math.round((at.getTime() - Date.now()) / 3_600_000);
    // The round cannot see every sandbox: all of them are read, less the
    // one held in full, whose deliveries are due now.
    assert.equal(hoursAway(await dueAt([first])), 1);
    // Nine sandboxes: the round sees them all and reads only those not held.
    await sql`delete from queue.deliveries
               where tenant_id in (${ids[9]}, ${ids[10]})`;
    assert.equal(hoursAway(await dueAt([first])), 1);
    assert.equal(hoursAway(await dueAt([first, second])), 2);
    // All held: nothing to wait for but a finish.
    assert.equal(await dueAt(ids.slice(0, 9)), null);
  });
});
