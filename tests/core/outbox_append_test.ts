/**
 * lib/outbox/append.ts as a part of the caller's own statement: the outbox
 * rows are written only when the caller's condition holds, in the same
 * statement as the caller's own rows, and nothing else is touched;
 * envelopes are validated before any SQL goes out.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { asService } from "../../lib/db/service.ts";
import { outboxWrites } from "../../lib/outbox/append.ts";
import {
  createSandbox,
  createTestServices,
  orderPlacedEnvelope,
  placeOrder,
  SENDER,
} from "./_messaging.ts";

Deno.test("outboxWrites: the order and its outbox row in one statement, or neither", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    // An older row of this sandbox that waits for a retry (as a failed
    // publish leaves it).
    const old = await placeOrder(sql, tenantId, "O0");
    await sql`update t_sender.outbox
                 set attempts = 1, next_attempt_at = now() + interval '1 hour'
               where message_id = ${old.messageId}`;
    const insertOrder = (orderId: string) =>
      asService(sql, SENDER, { tenantId }, async (tx) => {
        const envelope = orderPlacedEnvelope(tenantId, orderId);
        const [row] = await tx.sql<{ placed: boolean }[]>`
          with o as (
            insert into t_sender.orders (id, tenant_id)
            values (${orderId}, ${tenantId})
            on conflict do nothing
            returning id
          ), ${outboxWrites(tx, [envelope], tx.sql`exists (select from o)`)}
          select exists (select from o) as placed`;
        return row.placed;
      });
    const due = async () =>
      (await sql`select next_attempt_at <= now() as due from t_sender.outbox
                  where message_id = ${old.messageId}`)[0].due;

    // The id is taken: no order, so no outbox row.
    assert.equal(await insertOrder("O0"), false);
    const [{ n: after0 }] = await sql`
      select count(*)::int as n from t_sender.outbox`;
    assert.equal(after0, 1);
    assert.equal(await due(), false);

    // A new order: its row. The older row still waits: the relay takes it
    // with the new one (tests/core/relay_move_test.ts).
    assert.equal(await insertOrder("O1"), true);
    const rows = await sql`
      select envelope->>'aggregateId' as id, type, state
        from t_sender.outbox order by id`;
    assert.deepEqual(rows.map((r) => [r.id, r.type, r.state]), [
      ["O0", "OrderPlaced", "pending"],
      ["O1", "OrderPlaced", "pending"],
    ]);
    assert.equal(await due(), false);
  });
});

Deno.test("outboxWrites: an invalid envelope is refused before any SQL", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const bad = { ...orderPlacedEnvelope(tenantId, "O1"), type: "not a type" };
    await assert.rejects(
      () =>
        asService(sql, SENDER, { tenantId }, (tx) => {
          outboxWrites(tx, [bad]);
          return Promise.resolve();
        }),
      /event type/,
    );
    await assert.rejects(
      () =>
        asService(sql, SENDER, { tenantId }, (tx) => {
          outboxWrites(tx, []);
          return Promise.resolve();
        }),
      /no envelopes/,
    );
  });
});
