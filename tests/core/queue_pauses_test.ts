/**
 * Paused pairs in the PostgreSQL queue (lib/ledger/pauses.ts): the claim
 * takes every due delivery but a paused pair's, in every sandbox of its
 * round, and does not count them as due when only they wait; a move hands
 * off the other deliveries and stores the paused pair's pending; the
 * cached reader sees a change on its pool at once.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  createSandbox,
  createTestServices,
  placeOrders,
  RECEIVERS,
  ROUTING,
  SENDER,
} from "./_messaging.ts";
import { Ledger, pgPauses, setPaused } from "../../lib/ledger/mod.ts";
import { claimBatch } from "../../lib/ledger/deliveries_sql.ts";
import { PgMove } from "../../lib/carriers/mod.ts";

const [A, B] = RECEIVERS;

Deno.test("the claim leaves a paused pair's deliveries, in its sandbox only, and counts none of them due when only they wait", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const one = await createSandbox(sql, "one");
    const two = await createSandbox(sql, "two");
    const shortcut = new PgMove(new Ledger(sql, ROUTING));
    await placeOrders(sql, one, ["1a", "1b"]);
    await placeOrders(sql, two, ["2a"]);
    await shortcut.move(SENDER, 100);

    const pauses = pgPauses(sql);
    assert.deepEqual(await pauses(), { tenantIds: [], subscribers: [] });
    assert.equal((await setPaused(sql, one, A, true, "tester")).changed, true);
    // Seen at once on the pool that wrote it.
    assert.deepEqual(await pauses(), { tenantIds: [one], subscribers: [A] });
    assert.equal(await pauses.isPaused(one, A), true);
    assert.equal(await pauses.isPaused(two, A), false);

    const claim = async (limit = 100) =>
      await claimBatch(sql, "consumer-1", {
        limit,
        leaseMs: 60_000,
        round: {
          after: null,
          perTenant: 100,
          held: { tenantIds: [], subscribers: [], counts: [] },
          closed: { lanes: await pauses(), tenantIds: [] },
        },
      });
    // Round-robin still: a claim of two takes one of each sandbox, and in
    // `one` not the paused pair's oldest.
    const lane = (d: { tenantId: string; subscriber: string }) =>
      `${d.tenantId}:${d.subscriber}`;
    const pair = (await claim(2)).claimed;
    assert.deepEqual(
      new Set(pair.map((d) => d.tenantId)),
      new Set([one, two]),
    );
    assert.ok(!pair.map(lane).includes(`${one}:${A}`));
    const rest = (await claim()).claimed;
    const taken = [...pair, ...rest].map(lane);
    // Two orders in `one` to B and C, one order in `two` to all three.
    assert.equal(taken.length, 2 * 2 + 3);
    assert.ok(!taken.includes(`${one}:${A}`), JSON.stringify(taken));
    assert.equal(taken.filter((t) => t === `${two}:${A}`).length, 1);

    // Only the paused pair's deliveries wait: nothing claimed, and the next
    // due time is the end of the claimed ones' lease, not now (theirs).
    const second = await claim();
    assert.deepEqual(second.claimed, []);
    assert.ok(
      second.nextDueAt!.getTime() > Date.now() + 50_000,
      String(second.nextDueAt),
    );
    const [waiting] = await sql<{ n: number; attempts: number }[]>`
      select count(*)::int as n, coalesce(sum(attempts), 0)::int as attempts
        from queue.deliveries
       where tenant_id = ${one} and subscriber = ${A} and state = 'pending'`;
    assert.deepEqual({ ...waiting }, { n: 2, attempts: 0 });

    // Resumed: they are claimed.
    await setPaused(sql, one, A, false, "tester");
    const third = await claim();
    assert.deepEqual(third.claimed.map(lane), [`${one}:${A}`, `${one}:${A}`]);
  });
});

Deno.test("a move hands off every delivery but a paused pair's, which it stores pending", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const shortcut = new PgMove(new Ledger(sql, ROUTING));
    await setPaused(sql, tenantId, B, true, "tester");
    const pauses = pgPauses(sql);
    const [placed] = await placeOrders(sql, tenantId, ["P1"]);
    const moved = await shortcut.move(SENDER, 10, {
      handoff: {
        owner: "consumer-here",
        leaseMs: 60_000,
        max: 10,
        closed: { lanes: await pauses(), tenantIds: [] },
      },
    });
    assert.deepEqual(
      moved.handed.map((d) => d.subscriber).sort(),
      RECEIVERS.filter((r) => r !== B),
    );
    const rows = await sql<
      { subscriber: string; state: string; attempts: number }[]
    >`select subscriber, state, attempts from queue.deliveries
       where message_id = ${placed.messageId} order by subscriber`;
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      RECEIVERS.map((r) => ({
        subscriber: r,
        state: r === B ? "pending" : "in_flight",
        attempts: r === B ? 0 : 1,
      })),
    );
  });
});
