/**
 * The bakery's relay moves on connections of its own (services/mod.ts
 * `startBakeryMessaging`): at most two, named `bakery-relay`, closed on
 * stop; a process without the relay role opens none.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { startBakeryMessaging } from "../services/mod.ts";
import { placeOrder } from "../services/orders/place.ts";
import { countOf, eventually, testConfig, walkthroughOrder } from "./_app.ts";
import { type TestDatabase, withTestDatabase } from "./_db.ts";

/** This database's connections named `bakery-relay`. */
function relayConnections(sql: Sql): Promise<number> {
  return countOf(sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
     where datname = current_database() and application_name = 'bakery-relay'`);
}

/** The walkthrough's order, typed as placeOrder takes it. */
const order = () => ({
  ...walkthroughOrder(),
  fulfilment: "delivery" as const,
});

async function newSandbox(sql: Sql): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.tenants (name) values ('relay pool') returning id`;
  return row.id;
}

/**
 * The bakery's messaging on `db` with these roles; `stop` stops it and
 * removes its data folder.
 */
async function startOn(
  db: TestDatabase,
  roles: { relay: boolean; consume: boolean },
) {
  const config = testConfig();
  const { logger } = memoryLogger("warn");
  const messaging = await startBakeryMessaging(
    { sql: db.sql, log: logger, config, url: db.url },
    { roles },
  );
  return {
    stop: async () => {
      await messaging.stop();
    },
  };
}

Deno.test("the relay moves an order's message on its own two connections, closed on stop", async () => {
  await withTestDatabase(async (db) => {
    const messaging = await startOn(db, { relay: true, consume: false });
    try {
      const sandboxId = await newSandbox(db.sql);
      const placed = await placeOrder(db.sql, sandboxId, order());
      // No consumers run: the order's deliveries stay as the move made them.
      await eventually(
        "the order's OrderPlaced in the queue",
        async () =>
          await countOf(db.sql<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries d
            join queue.messages m using (message_id)
           where m.aggregate_id = ${placed.orderId}
             and m.type = 'OrderPlaced'`) === 3,
      );
      assert.equal(
        await countOf(db.sql<{ n: number }[]>`
          select count(*)::int as n from orders.outbox`),
        0,
      );
      const open = await relayConnections(db.sql);
      assert.ok(open >= 1 && open <= 2, `${open} relay connections`);
    } finally {
      await messaging.stop();
    }
    // A closed connection leaves pg_stat_activity when its backend exits.
    await eventually(
      "no relay connection left",
      async () => await relayConnections(db.sql) === 0,
    );
  });
});

Deno.test("a process without the relay role opens no relay connection", async () => {
  await withTestDatabase(async (db) => {
    const messaging = await startOn(db, { relay: false, consume: true });
    try {
      const sandboxId = await newSandbox(db.sql);
      await placeOrder(db.sql, sandboxId, order());
      assert.equal(await relayConnections(db.sql), 0);
      assert.equal(
        await countOf(db.sql<{ n: number }[]>`
          select count(*)::int as n from orders.outbox
           where state = 'pending'`),
        1,
      );
    } finally {
      await messaging.stop();
    }
  });
});
