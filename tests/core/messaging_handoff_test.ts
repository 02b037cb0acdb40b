/**
 * The handoff: a move stores its deliveries already leased to a consumer of
 * the moving process, which sends them without a claim. A move hands off
 * its first deliveries, as many as its `max` and the share's room allow,
 * and stores the rest pending; handed-off ones need no NOTIFY; a process
 * that dies holding some loses nothing, since they are due again when the
 * lease runs out.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  placeOrders,
  RECEIVERS,
  recordingShortcut,
  ROUTING,
  SENDER,
  waitForDeliveries,
  waitForJobs,
  withWorkers,
} from "./_messaging.ts";
import { connect } from "../../lib/db/connect.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import { FairShare } from "../../lib/delivery/fair_share.ts";
import { QUEUE_CHANNEL } from "../../lib/ledger/mod.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { setOutboxWaker } from "../../lib/outbox/wake.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("a move hands off the deliveries that fit, leased to the consumer, and sends a NOTIFY only for the rest", async () => {
  await withTestDatabase(async ({ sql, url }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const shortcut = new PgMove(new Ledger(sql, ROUTING));
    const heard: string[] = [];
    const listener = connect(url, { max: 1 });
    try {
      await listener.listen(QUEUE_CHANNEL, (payload) => heard.push(payload));
      const handoff = { owner: "consumer-here", leaseMs: 60_000, max: 3 };

      const [placed] = await placeOrders(sql, tenantId, ["A1"]);
      const one = await shortcut.move(SENDER, 10, { handoff });
      assert.equal(one.rows, 1);
      assert.deepEqual(
        one.handed.map((d) => [d.subscriber, d.messageId, d.attempt]),
        RECEIVERS.map((r) => [r, placed.messageId, 1]),
      );
      assert.deepEqual(one.handed[0].envelope, placed);
      const leased = await sql<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries
         where message_id = ${placed.messageId} and state = 'in_flight'
           and lease_owner = 'consumer-here' and attempts = 1
           and lease_expires_at > now() + interval '50 seconds'
           and next_attempt_at = lease_expires_at`;
      assert.equal(leased[0].n, RECEIVERS.length);

      // Two messages make six deliveries, more than `max`: the first
      // message's three are handed off, the second's wait.
      const [b1, b2] = await placeOrders(sql, tenantId, ["B1", "B2"]);
      const two = await shortcut.move(SENDER, 10, { handoff });
      assert.equal(two.rows, 2);
      assert.ok(two.leftPending);
      assert.deepEqual(
        two.handed.map((d) => [d.subscriber, d.messageId]),
        RECEIVERS.map((r) => [r, b1.messageId]),
      );
      const pending = await sql<{ message_id: string }[]>`
        select message_id from queue.deliveries where state = 'pending'`;
      assert.deepEqual(
        pending.map((p) => p.message_id),
        RECEIVERS.map(() => b2.messageId),
      );

      // The share's room: lane a holds its cap already, and the tenant has
      // room for two more. Each lane is handed a prefix of its deliveries.
      const [c1, c2] = await placeOrders(sql, tenantId, ["C1", "C2"]);
      const three = await shortcut.move(SENDER, 10, {
        handoff: {
          ...handoff,
          max: 100,
          room: {
            perTenant: 4,
            perLane: 1,
            held: {
              tenantIds: [tenantId],
              subscribers: [RECEIVERS[0]],
              counts: [2],
            },
          },
        },
      });
      assert.deepEqual(
        three.handed.map((d) => [d.subscriber, d.messageId]),
        [[RECEIVERS[1], c1.messageId], [RECEIVERS[2], c1.messageId]],
      );
      const waiting = await sql<{ message_id: string; subscriber: string }[]>`
        select message_id, subscriber from queue.deliveries
         where state = 'pending' and message_id in (${c1.messageId},
                                                     ${c2.messageId})
         order by id`;
      assert.deepEqual(
        waiting.map((w) => [w.subscriber, w.message_id]),
        [
          [RECEIVERS[0], c1.messageId],
          ...RECEIVERS.map((r) => [r, c2.messageId]),
        ],
      );

      await sleep(200);
      assert.deepEqual(
        heard,
        ["", ""],
        "a NOTIFY for each move that left some pending",
      );
    } finally {
      await listener.end();
    }
  });
});

Deno.test("with an idle consumer, a commit's deliveries are handed to it and applied once each", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const { shortcut, moves: all } = recordingShortcut(sql);
    const moved = () => all.filter((m) => m.rows > 0);
    await withWorkers(
      db,
      { pollMs: 60_000, wrapShortcut: () => shortcut },
      async ({ messaging }) => {
        await sleep(300); // the loops' first ticks find nothing and sleep
        await placeOrder(sql, tenantId, "O1");
        await waitForJobs(sql, 1, 2_000);
        // The receivers answer before the consumer records their answers.
        await waitForDeliveries(sql, "done", RECEIVERS.length, 2_000);
        assert.equal(moved().length, 1);
        assert.deepEqual(
          moved()[0].handed.map((d) => d.subscriber),
          [...RECEIVERS],
        );
        const attempts = await sql<{ outcome: string; attempt: number }[]>`
        select outcome, attempt from queue.attempt_log`;
        assert.deepEqual(
          attempts.map((a) => [a.outcome, a.attempt]),
          RECEIVERS.map(() => ["done", 1]),
        );
        assert.equal(
          await count(
            sql,
            "queue.deliveries",
            sql`state = 'done' and lease_owner is null`,
          ),
          RECEIVERS.length,
        );
        assert.ok(messaging.owner);
      },
    );
  });
});

Deno.test("deliveries handed to a process that died are due again when the lease runs out, and delivered", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    // Commits here wake nobody: only the test's move and the poll act.
    setOutboxWaker(sql, () => {});
    await placeOrder(sql, tenantId, "O1");
    const moved = await new PgMove(new Ledger(sql, ROUTING)).move(
      SENDER,
      10,
      { handoff: { owner: "worker-gone", leaseMs: 300, max: 10 } },
    );
    assert.equal(moved.handed.length, RECEIVERS.length);
    await withWorkers(db, { pollMs: 100 }, async () => {
      await waitForJobs(sql, 1, 5_000);
      await waitForDeliveries(sql, "done", RECEIVERS.length, 2_000);
      const rows = await sql<{ attempts: number; state: string }[]>`
        select attempts, state from queue.deliveries`;
      // The handoff was the first attempt; the claim after the lease, the
      // second.
      assert.deepEqual(
        rows.map((r) => [r.state, r.attempts]),
        RECEIVERS.map(() => ["done", 2]),
      );
    });
  });
});

Deno.test("a move hands nothing over to a lane or a sandbox the share holds in full: those deliveries wait pending", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const [full, other] = [await createSandbox(sql), await createSandbox(sql)];
    const shortcut = new PgMove(new Ledger(sql, ROUTING));
    const [slow] = RECEIVERS;
    const share = new FairShare({
      perTenant: 3,
      perLane: 2,
      maxDetached: 10,
      stragglerMs: 250,
    });
    // The process holds two deliveries of `full` to `slow`: that lane is
    // full, the sandbox is not.
    share.hold([
      { tenantId: full, subscriber: slow },
      { tenantId: full, subscriber: slow },
    ]);
    const move = async () =>
      await shortcut.move(SENDER, 10, {
        handoff: {
          owner: "consumer-here",
          leaseMs: 60_000,
          max: 10,
          closed: share.closed(),
        },
      });
    const states = async (messageId: string) =>
      Object.fromEntries(
        (await sql<{ subscriber: string; state: string }[]>`
          select subscriber, state from queue.deliveries
           where message_id = ${messageId}`).map((
          r,
        ) => [r.subscriber, r.state]),
      );
    const inFlight = (but: readonly string[]) =>
      Object.fromEntries(
        RECEIVERS.map((r) => [r, but.includes(r) ? "pending" : "in_flight"]),
      );

    const [one] = await placeOrders(sql, full, ["F1"]);
    const first = await move();
    assert.deepEqual(
      first.handed.map((d) => d.subscriber).sort(),
      RECEIVERS.filter((r) => r !== slow),
    );
    assert.deepEqual(await states(one.messageId), inFlight([slow]));
    // The relay wakes a consumer of its own for the one left pending.
    assert.equal(first.leftPending, true);

    // One more of `full` held: the sandbox's whole share. Nothing of it is
    // handed over; another sandbox's move still is, whole.
    share.hold([{ tenantId: full, subscriber: RECEIVERS[1] }]);
    const [two] = await placeOrders(sql, full, ["F2"]);
    assert.deepEqual((await move()).handed, []);
    assert.deepEqual(await states(two.messageId), inFlight(RECEIVERS));
    const [three] = await placeOrders(sql, other, ["O1"]);
    const whole = await move();
    assert.equal(whole.handed.length, RECEIVERS.length);
    assert.equal(whole.leftPending, false);
    assert.deepEqual(await states(three.messageId), inFlight([]));
  });
});

// A handoff that leaves one lane's delivery pending: its NOTIFY skips this
// process, and the consumer that takes the rest finds its batch small. Fails
// when the relay does not wake a consumer for the pending one: it then waits
// for the minute's poll. The lane is closed for the move alone, as when its
// holder released it while the move ran.
Deno.test("the relay wakes a consumer for what its handoff left pending", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const [closedLane] = RECEIVERS;
    const leftPending: boolean[] = [];
    await withWorkers(db, {
      pollMs: 60_000,
      wrapShortcut: (inner) => ({
        move: async (service, limit, options) => {
          const handoff = options?.handoff && {
            ...options.handoff,
            closed: {
              lanes: { tenantIds: [tenantId], subscribers: [closedLane] },
              tenantIds: [],
            },
          };
          const moved = await inner.move(service, limit, {
            ...options,
            handoff,
          });
          if (handoff) leftPending.push(moved.leftPending);
          return moved;
        },
      }),
    }, async () => {
      await sleep(300); // the loops' first ticks find nothing and sleep
      await placeOrder(sql, tenantId, "O1");
      await waitForJobs(sql, 1, 3_000);
    });
    assert.ok(leftPending.includes(true), "no handoff left one pending");
  });
});
