/**
 * migrations/0017_outbox_owed_only.sql on a database that has history: the
 * published outbox rows leave the outbox for queue.messages, none lost, and
 * what is still owed stays where the relay finds it.
 */
import assert from "node:assert/strict";
import { connect } from "../lib/db/connect.ts";
import {
  CORE_MADE_BY,
  coreMigrationNames,
  migrate,
  MIGRATIONS_DIR,
  readMigrations,
} from "../kit/postgres/migrate.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { uuidv7 } from "../lib/outbox/envelope.ts";
import { emptyDatabase } from "./_db.ts";

const OWED_ONLY = "0017_outbox_owed_only.sql";

Deno.test("the outbox migration moves published rows to the queue's copies and keeps what is owed", async () => {
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 2 });
    try {
      const files = await readMigrations(MIGRATIONS_DIR);
      const at = files.findIndex((f) => f.name === OWED_ONLY);
      assert.ok(at > 0, `${OWED_ONLY} is among the migrations`);
      // The core's later files go right after the app's file that made the
      // core's first version.
      const made = files.findIndex((f) => f.name === CORE_MADE_BY);
      const { logger } = memoryLogger();
      await migrate(sql, logger, files.slice(0, at));

      const sandbox = crypto.randomUUID();
      const [copied, alone, owed] = [uuidv7(), uuidv7(), uuidv7()];
      const envelope = (id: string) => ({
        messageId: id,
        type: "OrderPlaced",
        aggregateId: `order-${id.slice(-4)}`,
      });
      const publishedAt = new Date("2026-11-01T10:00:00Z");
      for (const id of [copied, alone]) {
        await sql`
          insert into orders.outbox (sandbox_id, message_id, type, envelope,
                                     state, published_at)
          values (${sandbox}, ${id}, 'OrderPlaced',
                  ${sql.json(envelope(id))}, 'published', ${publishedAt})`;
      }
      await sql`
        insert into orders.outbox (sandbox_id, message_id, type, envelope)
        values (${sandbox}, ${owed}, 'OrderPlaced', ${
        sql.json(envelope(owed))
      })`;
      // The relay's move stored this one's copy; `alone` has none (published
      // some other way), and must not be lost.
      await sql`
        insert into queue.messages (message_id, sandbox_id, source, type,
                                    aggregate_id, envelope, published_at)
        values (${copied}, ${sandbox}, 'orders', 'OrderPlaced',
                ${envelope(copied).aggregateId}, ${sql.json(envelope(copied))},
                ${publishedAt})`;

      assert.deepEqual(
        await migrate(sql, logger, files),
        [
          ...files.slice(at, made + 1).map((f) => f.name),
          ...await coreMigrationNames(),
          ...files.slice(made + 1).map((f) => f.name),
        ],
      );

      const inQueue = await sql<
        { message_id: string; source: string; aggregate_id: string }[]
      >`
        select message_id, source, aggregate_id, published_at
          from queue.messages order by message_id`;
      assert.deepEqual(
        inQueue.map((m) => [m.message_id, m.source, m.aggregate_id]),
        [copied, alone].sort().map((id) => [
          id,
          "orders",
          envelope(id).aggregateId,
        ]),
      );
      for (const m of inQueue) {
        assert.equal(
          (m as unknown as { published_at: Date }).published_at.getTime(),
          publishedAt.getTime(),
        );
      }
      const left = await sql<{ message_id: string; state: string }[]>`
        select message_id, state from orders.outbox`;
      assert.deepEqual(left.map((r) => [r.message_id, r.state]), [
        [owed, "pending"],
      ]);
      // The message id is the key; a published state is refused.
      await assert.rejects(
        () =>
          sql`insert into orders.outbox (tenant_id, message_id, type, envelope)
              values (${sandbox}, ${owed}, 'OrderPlaced', '{}')`,
        /duplicate key/,
      );
      await assert.rejects(
        () => sql`update orders.outbox set state = 'published'`,
        /check constraint/,
      );
    } finally {
      await sql.end();
    }
  });
});
