import assert from "node:assert/strict";
import {
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { auditOnce, counted } from "../lib/ledger/audit.ts";
import { SUBSCRIBERS } from "../services/routing.ts";

Deno.test("closure audit: done deliveries are counted once as closed; an ack with no inbox row is a mismatch", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client);
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    // Every queue once: orders' and billing's (one database, or each its own).
    const queues = [...new Set([t.at("orders"), t.at("billing")])];
    // 3 OrderPlaced + 1 PaymentSucceeded + 6 OrderPaid deliveries.
    await eventually("every done delivery audited", async () => {
      let open = 0;
      for (const sql of queues) {
        const [r] = await sql`select count(*)::int as n from queue.deliveries d
          where d.state = 'done' and not ${counted(sql)}`;
        open += r.n;
      }
      return open === 0;
    });
    let closed = 0;
    for (const sql of queues) {
      const [r] = await sql`select coalesce(sum(closed), 0)::int as closed
        from queue.closure_counts where tenant_id = ${sandboxId}`;
      closed += r.closed;
    }
    assert.equal(closed, 10);

    // An acknowledgement the kitchen never recorded: a done delivery of a
    // message that is in no inbox.
    const messageId = crypto.randomUUID();
    const orders = t.at("orders");
    await orders`insert into queue.messages (message_id, tenant_id, source, type, aggregate_id, envelope)
      values (${messageId}, ${sandboxId}, 'orders', 'OrderPlaced', ${orderId}, '{}')`;
    const [d] = await orders`insert into queue.deliveries
        (tenant_id, message_id, subscriber, type, aggregate_id, state, done_at,
         done_xid)
      values (${sandboxId}, ${messageId}, 'kitchen', 'OrderPlaced', ${orderId}, 'done', now(),
              pg_current_xact_id())
      returning id`;
    // Seen as a mismatch before the audit (unaudited done, no inbox row)...
    const before = await client.json<{ totals: Record<string, number> }>(
      "GET",
      "/api/console/closure",
    );
    assert.equal(before.body.totals.mismatch, 1);
    // ...and after it, counted once even when two auditors race.
    // On orders' queue, reading each inbox where it is, as the bakery does.
    const options = {
      sql: orders,
      reader: "console",
      subscribers: SUBSCRIBERS,
      inboxOf: (s: string) => `${s}.inbox`,
      inboxDatabase: (s: string) => t.databases?.pools.get(s),
    };
    await Promise.all([auditOnce(options), auditOnce(options)]);
    const [m] = await orders`select delivery_id from queue.mismatches`;
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
