/**
 * The Queue Lab through its JSON API, on the whole bakery (its consumers
 * running on the same queue tables): a crash after printing and before
 * acknowledging prints an order twice without a record of printed ids and
 * once with one, though delivered twice; a poison order is a dead letter
 * after four tries; the bakery's consumers never take the lab's deliveries;
 * another sandbox sees none of it; bad settings are a 400 naming the field.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../lib/log/mod.ts";
import { wipeDue } from "../services/wipe.ts";
import { type Client, signIn, withTestBakery } from "./_app.ts";

interface Entry {
  worker: number;
  order: number;
  attempt: number;
  printed: boolean;
  duplicate: boolean;
  remembered: boolean;
  outcome: string;
  error: string | null;
}

interface QueueJson {
  tickets: number;
  duplicates: number;
  deadLetters: number;
  deliveries: number;
  timeline: Entry[];
}

async function run(client: Client, settings: Record<string, unknown>) {
  const { status, body } = await client.json<QueueJson>(
    "POST",
    "/api/labs/queue",
    settings,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

Deno.test("queue lab: a crash after printing prints twice without a record, once with one", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    const crash = {
      orders: 5,
      workers: 3,
      crash: "after-print-before-ack",
      poisonOrders: 0,
    };

    const forgetful = await run(client, { ...crash, receiverRemembers: false });
    assert.deepEqual(
      {
        tickets: forgetful.tickets,
        duplicates: forgetful.duplicates,
        deadLetters: forgetful.deadLetters,
        deliveries: forgetful.deliveries,
      },
      { tickets: 6, duplicates: 1, deadLetters: 0, deliveries: 6 },
    );
    const crashed = forgetful.timeline.filter((e) => e.outcome === "crashed");
    assert.equal(crashed.length, 1);
    assert.equal(crashed[0].order, 1);
    const again = forgetful.timeline.filter((e) => e.order === 1);
    assert.deepEqual(again.map((e) => [e.attempt, e.printed, e.outcome]), [
      [1, true, "crashed"],
      [2, true, "acked"],
    ]);
    assert.equal(again[1].duplicate, true);

    const remembers = await run(client, { ...crash, receiverRemembers: true });
    assert.deepEqual(
      {
        tickets: remembers.tickets,
        duplicates: remembers.duplicates,
        deliveries: remembers.deliveries,
      },
      { tickets: 5, duplicates: 0, deliveries: 6 },
    );
    const order1 = remembers.timeline.filter((e) => e.order === 1);
    assert.deepEqual(order1.map((e) => [e.printed, e.remembered, e.outcome]), [
      [true, false, "crashed"],
      [false, true, "acked"],
    ]);

    // Without a crash, nothing is delivered twice either way.
    const calm = await run(client, {
      orders: 5,
      workers: 3,
      crash: null,
      poisonOrders: 0,
      receiverRemembers: false,
    });
    assert.deepEqual([calm.tickets, calm.duplicates, calm.deliveries], [
      5,
      0,
      5,
    ]);
  });
});

Deno.test("queue lab: a poison order is a dead letter after four tries; one worker survives its crash", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Ada");
    const body = await run(client, {
      orders: 3,
      workers: 1,
      crash: "after-print-before-ack",
      poisonOrders: 1,
      receiverRemembers: false,
    });
    assert.equal(body.deadLetters, 1);
    // order 3 is the poison one: four tries; order 1 twice (the crash)
    assert.equal(body.deliveries, 4 + 2 + 1);
    assert.equal(body.tickets, 3);
    const poison = body.timeline.filter((e) => e.order === 3);
    assert.deepEqual(poison.map((e) => [e.attempt, e.outcome]), [
      [1, "retry"],
      [2, "retry"],
      [3, "retry"],
      [4, "dead"],
    ]);
    assert.match(
      poison[3].error ?? "",
      /Printer answered 503: the printer jams/,
    );
    // The run's row keeps what the queue said; its queue rows are gone, so
    // the console's dead letters, failure groups and alerts show only the
    // bakery's own.
    const { body: dead } = await client.json<
      { items: { subscriber: string }[] }
    >("GET", "/api/console/dead-letters");
    assert.deepEqual(
      dead.items.filter((d) => d.subscriber === "lab_printer"),
      [],
    );
    const { body: alerts } = await client.json<
      { alerts: { subject: string }[] }
    >("GET", "/api/console/alerts");
    assert.deepEqual(
      alerts.alerts.filter((a) => a.subject === "lab_printer"),
      [],
    );
    const [left] = await t.at("lab_printer")<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries
       where subscriber = 'lab_printer'`;
    assert.equal(left.n, 0);
  });
});

Deno.test("queue lab: another sandbox sees none of it; the page shows the last run", async () => {
  await withTestBakery(async (t) => {
    const ada = t.client();
    const bob = t.client();
    await signIn(ada, "Ada");
    await signIn(bob, "Bob");
    await run(ada, {
      orders: 4,
      workers: 2,
      crash: "after-print-before-ack",
      poisonOrders: 1,
      receiverRemembers: false,
    });
    const { body: bobs } = await bob.json<{ run: unknown }>(
      "GET",
      "/api/labs/queue",
    );
    assert.equal(bobs.run, null);
    const { body: bobDead } = await bob.json<{ items: unknown[] }>(
      "GET",
      "/api/console/dead-letters",
    );
    assert.equal(bobDead.items.length, 0);
    const { body: adas } = await ada.json<{ run: QueueJson | null }>(
      "GET",
      "/api/labs/queue",
    );
    assert.equal(adas.run?.tickets, 4);
    assert.equal(adas.run?.duplicates, 1);
    const page = await (await ada.fetch("/labs/queue")).text();
    assert.match(page, /data-testid="queue-timeline"/);
    assert.match(page, /data-kind="crash"/);
    assert.match(page, /data-kind="duplicate"/);
    assert.match(page, /data-testid="queue-duplicates">1</);
  });
});

Deno.test("queue lab: bad settings are a 400 naming the field; signed out is 401", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    assert.equal(
      (await client.json("POST", "/api/labs/queue", { orders: 1 })).status,
      401,
    );
    await signIn(client, "Ada");
    const cases: [Record<string, unknown>, string][] = [
      [{ orders: 51, receiverRemembers: true }, "orders"],
      [{ orders: 0, receiverRemembers: true }, "orders"],
      [{ orders: 5, workers: 6, receiverRemembers: true }, "workers"],
      [{ orders: 5, workers: 0, receiverRemembers: true }, "workers"],
      [{ orders: 5, crash: "before-print", receiverRemembers: true }, "crash"],
      [{ orders: 2, poisonOrders: 3, receiverRemembers: true }, "poisonOrders"],
      [{ orders: 5 }, "receiverRemembers"],
      [{ orders: 5, receiverRemembers: true, extra: 1 }, "extra"],
    ];
    for (const [body, field] of cases) {
      const { status, body: answer } = await client.json<
        { issues: { path: string }[] }
      >("POST", "/api/labs/queue", body);
      assert.equal(status, 400, JSON.stringify(body));
      assert.ok(
        answer.issues.some((i) => i.path === field),
        `${JSON.stringify(body)}: ${JSON.stringify(answer)}`,
      );
    }
    const form = await client.fetch("/labs/queue", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "_csrf=wrong&orders=3",
    });
    assert.equal(form.status, 403);
    await form.body?.cancel();
  });
});

Deno.test("labs: the daily wipe removes both labs' rows", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Ada");
    await client.json("POST", "/api/labs/ledger/contradictory-instruction");
    await run(client, {
      orders: 3,
      workers: 2,
      crash: "after-print-before-ack",
      poisonOrders: 1,
      receiverRemembers: true,
    });
    // Published rows leave the outbox; one still owed, for the wipe to find.
    await t.at("lab_sender")`
      insert into lab_sender.outbox (tenant_id, message_id, type, envelope)
      values (${sandboxId}, gen_random_uuid(), 'OrderCreated', '{}')`;
    const tables = [
      "lab_sender.orders",
      "lab_sender.outbox",
      "lab_receiver.inbox",
      "lab_receiver.jobs",
      "lab_receiver.refusals",
      "lab_printer.tickets",
      "lab_printer.inbox",
      "lab_printer.runs",
    ];
    const counts = async () => {
      const out: Record<string, number> = {};
      for (const table of tables) {
        const at = t.at(table.split(".")[0]);
        const [{ n }] = await at<{ n: number }[]>`
          select count(*)::int as n from ${at(table)}
           where tenant_id = ${sandboxId}`;
        out[table] = n;
      }
      return out;
    };
    const before = await counts();
    for (const table of tables) assert.ok(before[table] > 0, table);
    const tomorrow = new Date(Date.now() + 86_400_000);
    tomorrow.setUTCHours(11);
    const { logger } = memoryLogger("error");
    const wiped = await wipeDue(t.sql, logger, { at: tomorrow });
    assert.equal(wiped.ran, true);
    assert.deepEqual(
      await counts(),
      Object.fromEntries(tables.map((table) => [table, 0])),
    );
  });
});
