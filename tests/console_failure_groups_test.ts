/**
 * Failure groups and safe bulk actions through the console API: dead
 * letters grouped by receiver, event type and error pattern; a dry run that
 * counts and changes nothing; a whole group redriven or refused; and the
 * operator log's row for every action. Also over JetStream, where the
 * redrive of a group gives the broker each message again.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersOf,
  deadLettersSettle,
  eventually,
  placeOrderVia,
  setFaults,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue } from "./_console_ops.ts";
import { natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";

interface GroupJson {
  key: string;
  subscriber: string;
  eventType: string;
  pattern: string;
  count: number;
  firstDeadAt: string;
  lastDeadAt: string;
}

async function groupsOf(client: Client): Promise<GroupJson[]> {
  const { status, body } = await client.json<{ groups: GroupJson[] }>(
    "GET",
    "/api/console/failure-groups",
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body.groups;
}

Deno.test("error patterns: ids, times and numbers become placeholders; the status after 'answered' stays", async () => {
  await withTestBakery(async (t) => {
    const cases: [string, string][] = [
      [
        "Kitchen answered 409: no card for order 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "Kitchen answered 409: no card for order {id}",
      ],
      [
        "Receipts timed out after 2000 ms at 2026-12-01T10:00:00.123Z",
        "Receipts timed out after {n} ms at {time}",
      ],
      [
        "Kitchen answered 503: Kitchen refuses deliveries",
        "Kitchen answered 503: Kitchen refuses deliveries",
      ],
    ];
    // The function is the queue's: in orders' database in split mode.
    for (const [error, pattern] of cases) {
      const [row] = await t.at("orders")<{ p: string }[]>`
        select queue.error_pattern(${error}) as p`;
      assert.equal(row.p, pattern);
    }
  });
});

/** Two failure groups of three dead letters each: kitchen and schedule. */
async function twoGroups(t: TestBakery) {
  const client = t.client();
  await signIn(client, "Group operator");
  await setFaults(client, { kitchenRefuses: true, scheduleRefuses: true });
  const orders = [];
  for (let i = 0; i < 3; i++) orders.push(await placeOrderVia(client));
  await deadLettersSettle(client, 6);
  const groups = await groupsOf(client);
  return { client, orders, groups };
}

Deno.test("failure groups: counted per receiver, event type and pattern; a dry run changes nothing; a group is redriven and another refused, each with its operator row", async () => {
  await withTestBakery(async (t) => {
    const { client, groups } = await twoGroups(t);
    assert.deepEqual(
      groups.map((g) => [g.subscriber, g.eventType, g.count]).sort(),
      [["kitchen", "OrderPlaced", 3], ["schedule", "OrderPlaced", 3]],
    );
    const kitchen = groups.find((g) => g.subscriber === "kitchen")!;
    const schedule = groups.find((g) => g.subscriber === "schedule")!;
    assert.match(kitchen.pattern, /^Kitchen answered 503/);
    assert.ok(kitchen.firstDeadAt <= kitchen.lastDeadAt);
    assert.match(kitchen.key, /^[0-9a-f]{16}$/);

    // A dry run: the count, and nothing changed.
    const dry = await client.json("POST", "/api/console/dead-letters/redrive", {
      group: kitchen.key,
      dryRun: true,
    });
    const { preview, ...counted } = dry.body as {
      preview: { outcome: string }[];
    };
    assert.deepEqual([dry.status, counted], [200, {
      count: 3,
      beyondReplayHorizon: 0,
    }]);
    // The kitchen takes all three now: each would apply.
    assert.deepEqual(preview.map((p) => p.outcome), [
      "apply",
      "apply",
      "apply",
    ]);
    assert.equal((await deadLettersOf(client)).length, 6);
    assert.equal(
      await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.actions`,
      ),
      0,
    );

    // A malformed key is a 400 naming it.
    const bad = await client.json<{ issues: { path: string }[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { group: "not a key" },
    );
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.issues.map((i) => i.path), ["group"]);

    // The kitchen group, redriven once the kitchen takes deliveries again.
    await setFaults(client, { kitchenRefuses: false });
    const redriven = await client.json<{ count: number; ids: number[] }>(
      "POST",
      "/api/console/dead-letters/redrive",
      { group: kitchen.key },
    );
    assert.equal(redriven.status, 202);
    assert.equal(redriven.body.count, 3);
    await eventually("the kitchen's redriven deliveries done", async () => {
      // OrderPlaced's deliveries: in orders' queue.
      const rows = await t.at("orders")<{ state: string }[]>`
        select state from queue.deliveries
         where id = any(${redriven.body.ids}::bigint[])`;
      return rows.every((r) => r.state === "done");
    });
    assert.deepEqual(
      (await deadLettersOf(client)).map((d) => d.subscriber),
      ["schedule", "schedule", "schedule"],
    );

    // The schedule group refused: a reason is required.
    const noReason = await client.json<{ issues: { path: string }[] }>(
      "POST",
      "/api/console/dead-letters/refuse",
      { group: schedule.key },
    );
    assert.equal(noReason.status, 400);
    assert.deepEqual(noReason.body.issues.map((i) => i.path), ["reason"]);
    const refused = await client.json(
      "POST",
      "/api/console/dead-letters/refuse",
      {
        group: schedule.key,
        reason: "schedule rebuilt by hand",
      },
    );
    assert.equal(refused.status, 200);
    assert.equal(refused.body.count, 3);
    assert.deepEqual(await groupsOf(client), []);

    // One operator row per action (not for the dry run), newest first.
    const { body: log } = await client.json<{
      items: {
        actor: string;
        action: string;
        count: number;
        target: Record<string, unknown>;
      }[];
    }>("GET", "/api/console/actions");
    assert.deepEqual(
      log.items.filter((a) => a.action !== "fault").map((a) => [
        a.action,
        a.actor,
        a.count,
        a.target.group,
      ]),
      [
        ["refuse", "Group operator", 3, schedule.key],
        ["redrive", "Group operator", 3, kitchen.key],
      ],
    );
  });
});

Deno.test("failure groups: another sandbox's groups are neither listed nor acted on", async () => {
  await withTestBakery(async (t) => {
    const { groups } = await twoGroups(t);
    const other = t.client();
    await signIn(other, "Other operator");
    assert.deepEqual(await groupsOf(other), []);
    const redrive = await other.json(
      "POST",
      "/api/console/dead-letters/redrive",
      {
        group: groups[0].key,
      },
    );
    assert.deepEqual([redrive.status, redrive.body.count], [202, 0]);
    assert.equal(
      await countInEveryQueue(t.sql, (sql) =>
        sql<{ n: number }[]>`
        select count(*)::int as n from queue.deliveries where state = 'dead'`),
      6,
    );
  });
});

natsTest(
  "failure groups over JetStream: a group's redrive gives the broker its messages again and they are delivered",
  async () => {
    await withTestBakery(async (t) => {
      const { client, groups } = await twoGroups(t);
      const kitchen = groups.find((g) => g.subscriber === "kitchen")!;
      await setFaults(client, { kitchenRefuses: false });
      const redriven = await client.json<{ count: number; ids: number[] }>(
        "POST",
        "/api/console/dead-letters/redrive",
        { group: kitchen.key },
      );
      assert.deepEqual([redriven.status, redriven.body.count], [202, 3]);
      await eventually(
        "the redriven deliveries done over JetStream",
        async () => {
          const rows = await t.at("orders")<
            { state: string; republish_at: Date | null }[]
          >`
        select state, republish_at from queue.deliveries
         where id = any(${redriven.body.ids}::bigint[])`;
          return rows.every((r) =>
            r.state === "done" && r.republish_at === null
          );
        },
        20_000,
      );
      const [{ n }] = await t.at("kitchen")<{ n: number }[]>`
      select count(*)::int as n from kitchen.inbox`;
      assert.equal(n, 3);
    }, {
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: testStream(),
    });
  },
);
