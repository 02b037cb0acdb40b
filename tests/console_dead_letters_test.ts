/**
 * Dead letters through the console API: refuse one (with a reason, or not at
 * all), and redrive or refuse many by filter or by ids, oldest first.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersOf,
  deadLettersSettle,
  type DeliveryJson,
  eventually,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue } from "./_console_ops.ts";

async function closureTotals(client: Client) {
  const { status, body } = await client.json<{
    totals: Record<string, number>;
    bySubscriber: Record<string, Record<string, number>>;
  }>("GET", "/api/console/closure");
  assert.equal(status, 200);
  return body;
}

async function deliveryState(client: Client, id: number) {
  const { status, body } = await client.json<{
    delivery: DeliveryJson;
    actions: { action: string; actor: string; reason: string | null }[];
  }>("GET", `/api/console/deliveries/${id}`);
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

Deno.test("dead letters: refuse one with a reason; no reason is a 400; not a dead letter is a 404", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Counter operator");
    await setFaults(client, { kitchenRefuses: true });
    const { orderId } = await placeOrderVia(client);
    const [dead] = await deadLettersSettle(client, 1);
    assert.deepEqual([dead.subscriber, dead.eventType, dead.orderId], [
      "kitchen",
      "OrderPlaced",
      orderId,
    ]);

    // No reason, or a blank one: 400 naming `reason`, and nothing changes.
    for (
      const body of [{}, { reason: "" }, { reason: "   " }, {
        reason: "x".repeat(501),
      }]
    ) {
      const refused = await client.json<
        { error: string; issues: { path: string }[] }
      >("POST", `/api/console/dead-letters/${dead.id}/refuse`, body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.deepEqual(refused.body.issues.map((i) => i.path), ["reason"]);
      assert.match(refused.body.error, /reason/);
    }
    assert.deepEqual((await deadLettersOf(client)).map((d) => d.id), [dead.id]);

    // Ids that are not dead letters: a done delivery, an unknown id.
    const { body: order } = await client.json<
      { deliveries: { subscriber: string; state: string }[] }
    >("GET", `/api/orders/${orderId}`);
    assert.ok(order.deliveries.some((d) => d.subscriber === "schedule"));
    // Every delivery here is of a message of orders: in its queue.
    const queue = t.at("orders");
    const [schedule] = await queue<{ id: string; state: string }[]>`
      select id, state from queue.deliveries
       where aggregate_id = ${orderId} and subscriber = 'schedule'`;
    assert.equal(schedule.state, "done");
    for (const id of [Number(schedule.id), dead.id + 1000, 0, "x"]) {
      const redrive = await client.json(
        "POST",
        `/api/console/dead-letters/${id}/redrive`,
      );
      assert.equal(redrive.status, 404, `redrive ${id}`);
      const refuse = await client.json(
        "POST",
        `/api/console/dead-letters/${id}/refuse`,
        { reason: "not a dead letter" },
      );
      assert.equal(refuse.status, 404, `refuse ${id}`);
    }
    const [untouched] = await queue<{ state: string }[]>`
      select state from queue.deliveries where id = ${schedule.id}`;
    assert.equal(untouched.state, "done");
    assert.equal(
      await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.actions`,
      ),
      0,
    );

    // Refused with a reason: closed, with who and why.
    const reason = "the customer called: no buns today";
    const refused = await client.json<
      { count: number; ids: number[]; reason: string; actor: string }
    >("POST", `/api/console/dead-letters/${dead.id}/refuse`, { reason });
    assert.equal(refused.status, 200, JSON.stringify(refused.body));
    assert.deepEqual(refused.body, {
      count: 1,
      ids: [dead.id],
      reason,
      actor: "Counter operator",
    });
    assert.deepEqual(await deadLettersOf(client), []);

    const closure = await closureTotals(client);
    assert.equal(closure.totals.refused, 1);
    assert.equal(closure.totals.dead, 0);
    assert.equal(closure.bySubscriber.kitchen.refused, 1);

    const detail = await deliveryState(client, dead.id);
    assert.equal(detail.delivery.state, "refused");
    assert.equal(detail.delivery.refusedReason, reason);
    assert.equal(detail.delivery.refusedBy, "Counter operator");
    assert.ok(detail.delivery.refusedAt);
    assert.deepEqual(
      detail.actions.map((a) => [a.action, a.actor, a.reason]),
      [["refuse", "Counter operator", reason]],
    );
    const actions = await queue<
      { action: string; actor: string; reason: string }[]
    >`
      select action, actor, reason from queue.actions where delivery_id = ${dead.id}`;
    assert.deepEqual(actions.map((a) => [a.action, a.actor, a.reason]), [[
      "refuse",
      "Counter operator",
      reason,
    ]]);

    // A refused obligation is final: neither redrive nor refuse finds it.
    const again = await client.json(
      "POST",
      `/api/console/dead-letters/${dead.id}/redrive`,
    );
    assert.equal(again.status, 404);
    const twice = await client.json(
      "POST",
      `/api/console/dead-letters/${dead.id}/refuse`,
      { reason: "twice" },
    );
    assert.equal(twice.status, 404);
    assert.equal((await deliveryState(client, dead.id)).actions.length, 1);
  });
});

Deno.test("dead letters: bulk redrive by subscriber, oldest first; bulk refuse of chosen ids; unknown filters are a 400", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Bulk operator");
    await setFaults(client, { scheduleRefuses: true, crmRefuses: true });
    const orders = [];
    for (let i = 0; i < 2; i++) {
      const { orderId } = await placeOrderVia(client);
      await payVia(client, orderId);
      orders.push(orderId);
    }
    // Schedule: OrderPlaced and OrderPaid of both orders; CRM: OrderPaid.
    const all = await deadLettersSettle(client, 6);
    const schedule = await deadLettersOf(client, "subscriber=schedule");
    const crm = await deadLettersOf(client, "subscriber=crm");
    assert.equal(schedule.length, 4);
    assert.equal(crm.length, 2);
    assert.deepEqual(
      (await deadLettersOf(client, "eventType=OrderPaid")).map((d) =>
        d.subscriber
      ).sort(),
      ["crm", "crm", "schedule", "schedule"],
    );
    assert.equal(
      (await deadLettersOf(client, "subscriber=schedule&eventType=OrderPlaced"))
        .length,
      2,
    );
    // The list is oldest first.
    const deadAts = all.map((d) => Date.parse(d.deadAt!));
    assert.deepEqual(deadAts, [...deadAts].sort((a, b) => a - b));

    // Unknown subscriber or event type: 400, for lists and bulk actions.
    for (
      const query of [
        "subscriber=bakery",
        "eventType=OrderBaked",
        "since=yesterday",
      ]
    ) {
      const list = await client.json(
        "GET",
        `/api/console/dead-letters?${query}`,
      );
      assert.equal(list.status, 400, query);
    }
    for (
      const [path, body, field] of [
        ["redrive", { subscriber: "bakery" }, "subscriber"],
        ["redrive", { eventType: "OrderBaked" }, "eventType"],
        ["refuse", { subscriber: "bakery", reason: "r" }, "subscriber"],
        ["refuse", { eventType: "OrderBaked", reason: "r" }, "eventType"],
        ["refuse", { ids: [all[0].id] }, "reason"],
      ] as const
    ) {
      const answer = await client.json<{ issues: { path: string }[] }>(
        "POST",
        `/api/console/dead-letters/${path}`,
        body,
      );
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.deepEqual(answer.body.issues.map((i) => i.path), [field]);
    }
    assert.equal((await deadLettersOf(client)).length, 6);

    // Make "oldest first" differ from id order: the schedule's first dead
    // letter is redriven while the fault is still on, and dies again last.
    const first = schedule.reduce((a, b) => a.id < b.id ? a : b);
    const retried = await client.json(
      "POST",
      `/api/console/dead-letters/${first.id}/redrive`,
    );
    assert.equal(retried.status, 202);
    let byAge: DeliveryJson[] = [];
    await eventually("the redriven dead letter to die again", async () => {
      byAge = await deadLettersOf(client, "subscriber=schedule");
      return byAge.length === 4 && byAge.at(-1)!.id === first.id;
    });
    assert.equal(byAge.at(-1)!.attempts, 5);
    const ids = byAge.map((d) => d.id);
    assert.notDeepEqual(ids, [...ids].sort((a, b) => a - b));

    // Bulk redrive of the schedule's, after the fault is cleared.
    await setFaults(client, { scheduleRefuses: false });
    const redriven = await client.json<{ count: number; ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "schedule" },
    );
    assert.equal(redriven.status, 202, JSON.stringify(redriven.body));
    assert.equal(redriven.body.count, 4);
    assert.deepEqual(redriven.body.ids, ids);
    await eventually(
      "the schedule's redriven deliveries to be done",
      async () => {
        const { body } = await client.json<{ items: DeliveryJson[] }>(
          "GET",
          "/api/console/deliveries?subscriber=schedule",
        );
        return body.items.length === 4 &&
          body.items.every((d) => d.state === "done");
      },
    );
    const bookings = await t.at("schedule")<
      { order_id: string; state: string }[]
    >`
      select distinct order_id, state from schedule.bookings order by 1`;
    assert.deepEqual(
      bookings.map((b) => [b.order_id, b.state]),
      [...orders].sort().map((id) => [id, "reserved"]),
    );
    assert.deepEqual(
      (await deadLettersOf(client)).map((d) => d.id),
      crm.map((d) => d.id),
    );

    // Refuse only the chosen one: the other stays dead.
    const [chosen, other] = crm;
    const refused = await client.json<
      { count: number; ids: number[]; actor: string }
    >("POST", "/api/console/dead-letters/refuse", {
      ids: [chosen.id],
      reason: "the CRM is being replaced",
    });
    assert.equal(refused.status, 200, JSON.stringify(refused.body));
    assert.equal(refused.body.count, 1);
    assert.deepEqual(refused.body.ids, [chosen.id]);
    assert.equal(refused.body.actor, "Bulk operator");
    assert.deepEqual((await deadLettersOf(client)).map((d) => d.id), [
      other.id,
    ]);
    // Orders' OrderPaid: its deliveries are in orders' queue.
    const states = await t.at("orders")<{ id: string; state: string }[]>`
      select id, state from queue.deliveries where subscriber = 'crm' order by id`;
    assert.deepEqual(
      states.map((s) => [Number(s.id), s.state]),
      [[chosen.id, "refused"], [other.id, "dead"]].sort((a, b) =>
        (a[0] as number) - (b[0] as number)
      ),
    );
    const closure = await closureTotals(client);
    assert.equal(closure.bySubscriber.crm.refused, 1);
    assert.equal(closure.bySubscriber.crm.dead, 1);
    assert.equal(closure.bySubscriber.schedule.closed, 4);
    assert.equal(closure.totals.dead, 1);

    // Both orders are otherwise complete.
    for (const orderId of orders) {
      const { body } = await client.json<{ state: string }>(
        "GET",
        `/api/orders/${orderId}`,
      );
      assert.equal(body.state, "paid");
    }
    // Redriving the last one with the fault cleared delivers it.
    await setFaults(client, { crmRefuses: false });
    const last = await client.json<{ count: number; ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { eventType: "OrderPaid" },
    );
    assert.equal(last.status, 202);
    assert.deepEqual(last.body, { count: 1, ids: [other.id] });
    await eventually("the last CRM delivery to be done", async () => {
      const [row] = await t.at("orders")<{ state: string }[]>`
        select state from queue.deliveries where id = ${other.id}`;
      return row.state === "done";
    });
  });
});
