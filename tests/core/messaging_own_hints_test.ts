/**
 * A process does not answer its own hints twice. Its relay is woken in
 * process after a commit, and then no NOTIFY is sent for it; its consumers
 * are woken after a move, and the move's NOTIFY for other processes names
 * it, so that its listener skips it. Before, each ran a second move or claim
 * that found nothing, on the cores the receivers were waiting for. A hint
 * that names another process, or none, still wakes it.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  placeOrder,
  recordingShortcut,
  ROUTING,
  SENDER,
  waitForJobs,
  withWorkers,
} from "./_messaging.ts";
import { connect, type Sql } from "../../lib/db/connect.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import { QUEUE_CHANNEL } from "../../lib/ledger/mod.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { OUTBOX_CHANNEL } from "../../lib/outbox/channel.ts";
import { coalescingWaker, setOutboxWaker } from "../../lib/outbox/wake.ts";

/** A minute: whatever happens within the test was woken, not polled. */
const POLL_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pending = (sql: Sql) => count(sql, `${SENDER}.outbox`);

Deno.test("the listener skips a move's hint that names its own process and follows the others", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    // Commits on this pool send no hint of their own: the test sends them.
    setOutboxWaker(sql, () => {});
    await withWorkers(db, { pollMs: POLL_MS }, async ({ messaging }) => {
      await sleep(300); // the loops' first ticks find nothing and sleep
      await placeOrder(sql, tenantId, "O1");
      await sleep(300);
      assert.equal(await pending(sql), 1, "no hint, no move");
      await sql`select pg_notify(${OUTBOX_CHANNEL}, ${SENDER})`;
      await waitForJobs(sql, 1, 2_000);

      // A move made outside this process's loops, whose NOTIFY names it.
      await placeOrder(sql, tenantId, "O2");
      const moved = await new PgMove(new Ledger(sql, ROUTING))
        .move(SENDER, 10, { wokenBy: messaging.owner });
      assert.equal(moved.published, 1);
      await sleep(500);
      assert.equal(
        await count(sql, "queue.deliveries", sql`state = 'pending'`),
        3,
        "deliveries after a queue hint naming this process",
      );

      await sql`select pg_notify(${QUEUE_CHANNEL}, 'worker-elsewhere')`;
      await waitForJobs(sql, 2, 2_000);
    });
  });
});

Deno.test("a commit whose relay runs in process is one move, and sends no NOTIFY", async () => {
  await withTestDatabase(async (db) => {
    const { sql, url } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const { shortcut, moves } = recordingShortcut(sql);
    const heard: string[] = [];
    const listener = connect(url, { max: 1 });
    try {
      await listener.listen(OUTBOX_CHANNEL, (payload) => heard.push(payload));
      await withWorkers(
        db,
        { pollMs: POLL_MS, wrapShortcut: () => shortcut },
        async ({ messaging }) => {
          const waker = coalescingWaker(sql, {
            local: messaging,
            windowMs: 1,
          });
          setOutboxWaker(sql, waker.wake);
          await sleep(300); // the loops' first ticks find nothing and sleep
          moves.length = 0;

          await placeOrder(sql, tenantId, "O1");
          await waitForJobs(sql, 1, 2_000);
          await waker.flush();
          await sleep(300);

          assert.deepEqual(heard, [], "NOTIFYs on the outbox channel");
          assert.deepEqual(
            moves.map((m) => m.rows),
            [1],
            "moves after the commit (rows each)",
          );
        },
      );
    } finally {
      await listener.end();
    }
  });
});
