import assert from "node:assert/strict";
import {
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { auditOnce } from "../lib/queue/audit.ts";
import { SUBSCRIBERS } from "../services/routing.ts";

Deno.test("closure audit: done deliveries are counted once as closed; an ack with no inbox row is a mismatch", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client);
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    // 3 OrderPlaced + 1 PaymentSucceeded + 6 OrderPaid deliveries.
    await eventually("every done delivery audited", async () => {
      const [r] = await t.sql`select count(*)::int as n from queue.deliveries
        where state = 'done' and not audited`;
      return r.n === 0;
    });
    const [{ closed }] = await t.sql`select sum(closed)::int as closed
      from queue.closure_counts where tenant_id = ${sandboxId}`;
    assert.equal(closed, 10);

    // An acknowledgement the kitchen never recorded: a done delivery of a
    // message that is in no inbox.
    const messageId = crypto.randomUUID();
    await t
      .sql`insert into queue.messages (message_id, tenant_id, source, type, aggregate_id, envelope)
      values (${messageId}, ${sandboxId}, 'orders', 'OrderPlaced', ${orderId}, '{}')`;
    const [d] = await t.sql`insert into queue.deliveries
        (tenant_id, message_id, subscriber, type, aggregate_id, state, done_at)
      values (${sandboxId}, ${messageId}, 'kitchen', 'OrderPlaced', ${orderId}, 'done', now())
      returning id`;
    // Seen as a mismatch before the audit (unaudited done, no inbox row)...
    const before = await client.json<{ totals: Record<string, number> }>(
      "GET",
      "/api/console/closure",
    );
    assert.equal(before.body.totals.mismatch, 1);
    // ...and after it, counted once even when two auditors race.
    const options = {
      sql: t.sql,
      reader: "console",
      subscribers: SUBSCRIBERS,
      inboxOf: (s: string) => `${s}.inbox`,
    };
    await Promise.all([auditOnce(options), auditOnce(options)]);
    const [m] = await t.sql`select delivery_id from queue.mismatches`;
    assert.equal(Number(m.delivery_id), Number(d.id));
    const after = await client.json<
      {
        totals: Record<string, number>;
        bySubscriber: Record<string, Record<string, number>>;
      }
    >("GET", "/api/console/closure");
    assert.equal(after.body.totals.mismatch, 1);
    assert.equal(after.body.totals.closed, 10);
    assert.equal(after.body.bySubscriber.kitchen.mismatch, 1);
    const rows = await client.json<{ items: { deliveryId: number }[] }>(
      "GET",
      "/api/console/closure/rows?subscriber=kitchen&state=mismatch",
    );
    assert.deepEqual(rows.body.items.map((r) => r.deliveryId), [Number(d.id)]);
  });
});
