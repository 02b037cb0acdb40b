/**
 * The receivers that take a batch as one set (services/receivers,
 * lib/inbox/apply_many.ts) leave what they leave one message at a time:
 * the same effects and the same stored answers, stale and pickup orders
 * included. Each set statement is also run on its own, so that a set that
 * failed and fell back to the long way cannot pass unseen.
 */
import assert from "node:assert/strict";
import { asService } from "../lib/db/service.ts";
import { type ApplyMany, receiveBatch } from "../lib/inbox/mod.ts";
import { manyStatement } from "../lib/inbox/apply_many.ts";
import { type Envelope, newEnvelope } from "../lib/outbox/mod.ts";
import {
  applyManyToKitchen,
  applyToKitchen,
} from "../services/receivers/kitchen.ts";
import {
  applyManyToSchedule,
  applyToSchedule,
} from "../services/receivers/schedule.ts";
import {
  applyManyToDispatch,
  applyToDispatch,
} from "../services/receivers/dispatch.ts";
import {
  applyManyToCrm,
  applyManyToCustomers,
  applyToCrm,
  applyToCustomers,
} from "../services/receivers/history.ts";
import {
  applyManyToReceipts,
  applyToReceipts,
} from "../services/receivers/receipts.ts";
import { withTestDatabase } from "./_db.ts";

const RECEIVERS = {
  kitchen: [applyToKitchen, applyManyToKitchen],
  schedule: [applyToSchedule, applyManyToSchedule],
  dispatch: [applyToDispatch, applyManyToDispatch],
  crm: [applyToCrm, applyManyToCrm],
  customers: [applyToCustomers, applyManyToCustomers],
  receipts: [applyToReceipts, applyManyToReceipts],
} as const;

/** The i-th order of a batch: every other one a delivery, two lines. */
function orderPaid(tenantId: string, i: number, version = 2): Envelope {
  const orderId = crypto.randomUUID();
  return newEnvelope({
    type: "OrderPaid",
    aggregateId: orderId,
    aggregateVersion: version,
    tenantId,
    payload: {
      orderId,
      lines: [
        { sku: "croissant", name: "Croissant", qty: 1 + i, unitCents: 250 },
        { sku: "baguette", name: "Baguette", qty: 1, unitCents: 300 },
      ],
      totalCents: (1 + i) * 250 + 300,
      customer: { name: `Customer ${i}`, email: `c${i}@example.com` },
      fulfilment: i % 2 === 0 ? "delivery" : "pickup",
      day: "2026-12-24",
      paymentId: `pi_${i}`,
      paidAt: "2026-12-07T10:00:00.000Z",
    },
  });
}

/** The OrderPlaced before `paid`, which gives the kitchen its card. */
function placedBefore(paid: Envelope): Envelope {
  const { paymentId: _, paidAt: __, ...order } = paid.payload as Record<
    string,
    unknown
  >;
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId: paid.aggregateId,
    aggregateVersion: 1,
    tenantId: paid.tenantId,
    payload: order,
  });
}

/** `value` with receipt numbers, which name their order, made alike. */
function alike<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value).replace(/R-(\d{8})-[0-9A-F]{6}/g, "R-$1-#"),
  );
}

/** What a receiver keeps of a message, with the order's id left out. */
async function kept(
  sql: Parameters<typeof asService>[0],
  receiver: string,
  envelope: Envelope,
) {
  const orderId = envelope.aggregateId;
  const rows = {
    schedule: sql`select sku, day::text, qty, state, version
                    from schedule.bookings where order_id = ${orderId}
                   order by sku`,
    dispatch: sql`select state, version, customer_name, day::text
                    from dispatch.stops where order_id = ${orderId}`,
    kitchen: sql`select state, version, items, day::text
                   from kitchen.cards where order_id = ${orderId}`,
    crm: sql`select email, kind, note from crm.interactions
              where order_id = ${orderId}`,
    customers: sql`select email, name, event, total_cents
                     from customers.history where order_id = ${orderId}`,
    receipts:
      sql`select left(number, 11) as day, lines, total_cents, payment_ref
                    from receipts.receipts where order_id = ${orderId}`,
  }[receiver]!;
  const [inbox] = await sql`
    select status, outcome from ${sql(`${receiver}.inbox`)}
     where message_id = ${envelope.messageId}`;
  return alike({ effect: [...await rows], inbox: { ...inbox } });
}

Deno.test("receivers: a batch as one set leaves what one message at a time leaves", async () => {
  await withTestDatabase(async (db) => {
    const [{ id: tenantId }] = await db.sql<{ id: string }[]>`
      insert into platform.tenants (name) values ('sets') returning id`;
    const options = { replayHorizonDays: 30 };
    for (const [receiver, [one, many]] of Object.entries(RECEIVERS)) {
      const apply = one as Parameters<typeof receiveBatch>[3];
      const applyMany = many as ApplyMany;
      // The kitchen confirms the card its OrderPlaced made.
      const cards = async (paid: Envelope[]) => {
        if (receiver !== "kitchen") return;
        const placed = paid.map(placedBefore);
        const answers = await receiveBatch(
          db.sql,
          receiver,
          placed,
          apply,
          options,
        );
        assert.deepEqual(answers.map((a) => a.status), placed.map(() => 200));
      };
      // The set statement on its own: it runs, one row a message.
      const probe = [0, 1, 2].map((i) => orderPaid(tenantId, i));
      await cards(probe);
      const rows = await asService(
        db.sql,
        receiver,
        { tenantId },
        async (tx) => {
          const effect = applyMany(tx, probe);
          assert.ok(effect, `${receiver} takes OrderPaid as a set`);
          const out = await manyStatement(tx, probe, effect);
          throw Object.assign(new Error("roll back"), { out });
        },
      ).catch((e) => (e as { out?: unknown[] }).out);
      assert.equal(rows?.length, probe.length, receiver);

      // Twin batches, one each way; then each again at an older version,
      // which finds the later one applied (stale, or nothing new).
      const alone = [0, 1, 2, 3].map((i) => orderPaid(tenantId, i));
      const asSet = [0, 1, 2, 3].map((i) => orderPaid(tenantId, i));
      await cards([...alone, ...asSet]);
      const a = await receiveBatch(db.sql, receiver, alone, apply, options);
      const b = await receiveBatch(db.sql, receiver, asSet, apply, {
        ...options,
        applyMany,
      });
      const bodies = (xs: { body: unknown }[]) => alike(xs.map((x) => x.body));
      assert.deepEqual(bodies(b), bodies(a), receiver);
      const older = (e: Envelope): Envelope => ({
        ...e,
        messageId: crypto.randomUUID(),
        aggregateVersion: 1,
      });
      const a2 = await receiveBatch(
        db.sql,
        receiver,
        alone.map(older),
        apply,
        options,
      );
      const b2 = await receiveBatch(db.sql, receiver, asSet.map(older), apply, {
        ...options,
        applyMany,
      });
      assert.deepEqual(bodies(b2), bodies(a2), receiver);
      for (const [i, e] of alone.entries()) {
        const mine = await kept(db.sql, receiver, e);
        const theirs = await kept(db.sql, receiver, asSet[i]);
        assert.deepEqual(theirs, mine, `${receiver}, order ${i}`);
      }
    }

    // An OrderPaid whose card is not there yet: the set cannot answer it,
    // so the batch goes the long way, and only that one waits (409).
    const ready = orderPaid(tenantId, 0);
    await receiveBatch(
      db.sql,
      "kitchen",
      [placedBefore(ready)],
      applyToKitchen,
      options,
    );
    const early = orderPaid(tenantId, 1);
    const answers = await receiveBatch(
      db.sql,
      "kitchen",
      [ready, early],
      applyToKitchen,
      { ...options, applyMany: applyManyToKitchen },
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 409]);
    assert.deepEqual(answers[0].body, { card: "confirmed" });
  });
});

Deno.test("receivers: the kitchen takes OrderPlaced and OrderPaid in one set as it takes them one at a time", async () => {
  await withTestDatabase(async (db) => {
    const [{ id: tenantId }] = await db.sql<{ id: string }[]>`
      insert into platform.tenants (name) values ('kitchen sets') returning id`;
    const options = { replayHorizonDays: 30 };
    const withSet = { ...options, applyMany: applyManyToKitchen };
    // A card cancelled before its order was placed: that OrderPlaced is
    // stale (200, ignored) either way.
    const cancelledFirst = async (placed: Envelope) => {
      const cancelled = newEnvelope({
        type: "OrderCancelled",
        aggregateId: placed.aggregateId,
        aggregateVersion: 3,
        tenantId,
        payload: {
          ...placed.payload as Record<string, unknown>,
          reason: "changed my mind",
        },
      });
      const [a] = await receiveBatch(
        db.sql,
        "kitchen",
        [cancelled],
        applyToKitchen,
        options,
      );
      assert.equal(a.status, 200);
    };
    // One batch of each kind: two new orders, two paid ones whose cards are
    // there, one paid at an older version (stale), one placed after its
    // cancel (stale).
    const batchOf = async () => {
      const paid = [0, 1, 2].map((i) => orderPaid(tenantId, i));
      const cards = await receiveBatch(
        db.sql,
        "kitchen",
        paid.map(placedBefore),
        applyToKitchen,
        options,
      );
      assert.deepEqual(cards.map((c) => c.status), [200, 200, 200]);
      const staleOne = { ...paid[2], aggregateVersion: 1 };
      const late = placedBefore(orderPaid(tenantId, 3));
      await cancelledFirst(late);
      const fresh = [4, 5].map((i) => placedBefore(orderPaid(tenantId, i)));
      return [fresh[0], paid[0], late, fresh[1], paid[1], staleOne];
    };
    const alone = await batchOf();
    const asSet = await batchOf();
    // The set statement runs on its own for this batch: one row a message.
    const rows = await asService(
      db.sql,
      "kitchen",
      { tenantId },
      async (tx) => {
        const effect = applyManyToKitchen(tx, asSet);
        assert.ok(
          effect,
          "the kitchen takes OrderPlaced with OrderPaid as a set",
        );
        const out = await manyStatement(tx, asSet, effect);
        throw Object.assign(new Error("roll back"), { out });
      },
    ).catch((e) => (e as { out?: unknown[] }).out);
    assert.equal(rows?.length, asSet.length);

    const a = await receiveBatch(
      db.sql,
      "kitchen",
      alone,
      applyToKitchen,
      options,
    );
    const b = await receiveBatch(
      db.sql,
      "kitchen",
      asSet,
      applyToKitchen,
      withSet,
    );
    assert.deepEqual(b.map((x) => x.body), a.map((x) => x.body));
    assert.deepEqual(b.map((x) => x.status), asSet.map(() => 200));
    for (const [i, e] of alone.entries()) {
      assert.deepEqual(
        await kept(db.sql, "kitchen", asSet[i]),
        await kept(db.sql, "kitchen", e),
        `message ${i} (${e.type})`,
      );
    }

    // An OrderPlaced whose card is there and not stale is refused (422) on
    // the long way, which the set leaves it to; the rest still apply.
    const again = { ...asSet[0], messageId: crypto.randomUUID() };
    const next = placedBefore(orderPaid(tenantId, 6));
    const answers = await receiveBatch(
      db.sql,
      "kitchen",
      [next, again],
      applyToKitchen,
      withSet,
    );
    assert.deepEqual(answers.map((x) => x.status), [200, 422]);
  });
});
