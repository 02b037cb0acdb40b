/**
 * The operator log in pages (`GET /api/console/actions?before=&limit=` and
 * its page `/console/actions?before=`): walking it page by page gives every
 * entry of the sandbox once, in the log's order, across both of its tables
 * and through entries written in the same microsecond; another sandbox's
 * entries never appear; bad input is a 400 naming the field.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import { type Client, signIn, withTestBakery } from "./_app.ts";

interface Entry {
  at: string;
  actor: string;
  action: string;
  target: Record<string, unknown>;
}

interface LogPage {
  items: Entry[];
  next: string | null;
}

/** A moment with microseconds, `us` after a fixed one. */
function moment(us: number): string {
  const base = Date.parse("2026-11-30T12:00:00Z");
  const ms = base + Math.floor(us / 1000);
  const micro = String(us % 1000).padStart(3, "0");
  return new Date(ms).toISOString().replace("Z", `${micro}Z`);
}

/**
 * Writes 45 dead-letter actions and 45 pauses into `sandboxId`'s log: 20 of
 * each in one and the same microsecond, the rest one microsecond apart.
 */
async function seedLog(sql: Sql, sandboxId: string, who: string) {
  for (let i = 0; i < 45; i++) {
    const at = moment(i < 20 ? 500 : 1000 + 2 * i);
    await sql`
      insert into console.operator_actions (tenant_id, actor, action, target,
                                            count, at)
      values (${sandboxId}, ${`${who} o${i}`}, 'redrive',
              ${sql.json({ ids: [i] })}, 1, ${at})`;
    await sql`
      insert into queue.pause_actions (tenant_id, subscriber, action, actor,
                                       at)
      values (${sandboxId}, 'kitchen', ${i % 2 ? "resume" : "pause"},
              ${`${who} p${i}`}, ${i < 20 ? at : moment(1001 + 2 * i)})`;
  }
}

async function logPage(client: Client, query = ""): Promise<LogPage> {
  const { status, body } = await client.json<LogPage>(
    "GET",
    `/api/console/actions${query}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

Deno.test("operator log: page by page, every entry once and in order, across both tables and through ties, never another sandbox's", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Log reader");
    const other = t.client();
    const { sandboxId: otherId } = await signIn(other, "Neighbour");
    // In orders' queue: in split mode, the one the log reads pauses from.
    const orders = t.at("orders");
    await seedLog(orders, sandboxId, "mine");
    await seedLog(orders, otherId, "theirs");

    // The order the log promises, read from the tables themselves.
    const expected = (await orders<{ actor: string }[]>`
      select actor from (
        select at, 'o' as src, id, actor from console.operator_actions
         where tenant_id = ${sandboxId}
        union all
        select at, 'p', id, actor from queue.pause_actions
         where tenant_id = ${sandboxId}
      ) a order by at desc, src desc, id desc`).map((r) => r.actor);
    assert.equal(expected.length, 90);

    // The first page holds 50 by default and says where the next starts.
    const first = await logPage(client);
    assert.equal(first.items.length, 50);
    assert.ok(first.next);
    assert.deepEqual(first.items.map((e) => e.actor), expected.slice(0, 50));

    // Pages of 7 end inside the group of 40 entries of one microsecond.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor
        ? `?limit=7&before=${encodeURIComponent(cursor)}`
        : "?limit=7";
      const page = await logPage(client, query);
      assert.ok(page.items.length <= 7);
      seen.push(...page.items.map((e) => e.actor));
      cursor = page.next;
      pages++;
    } while (cursor && pages < 50);
    assert.equal(cursor, null, "the walk ended");
    assert.equal(pages, 13);
    assert.deepEqual(seen, expected);
    assert.ok(seen.every((a) => a.startsWith("mine ")));

    // Times keep their microseconds' order on the way out, ties included.
    const whole = await logPage(client, "?limit=200");
    assert.equal(whole.next, null);
    assert.equal(whole.items.length, 90);
    const ats = whole.items.map((e) => Date.parse(e.at));
    assert.ok(ats.every((at, i) => i === 0 || ats[i - 1] >= at));
    const pause = whole.items.find((e) => e.actor === "mine p3");
    assert.deepEqual(pause?.target, { subscriber: "kitchen" });
    assert.equal(pause?.action, "resume");

    // The neighbour's log is its own, whatever cursor it is given.
    const theirs = await logPage(
      other,
      `?limit=200&before=${encodeURIComponent(first.next!)}`,
    );
    assert.ok(theirs.items.length > 0);
    assert.ok(theirs.items.every((e) => e.actor.startsWith("theirs ")));
  });
});

Deno.test("operator log: its page links older and newest entries; bad cursors and limits are a 400 naming the field", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Log reader");
    // In orders' queue: in split mode, the one the log reads pauses from.
    await seedLog(t.at("orders"), sandboxId, "mine");

    const first = await (await client.fetch("/console/actions")).text();
    const older = first.match(
      /href="(\/console\/actions\?before=[^"]+)"[^>]*data-testid="actions-older"/,
    );
    assert.ok(older, "the first page links the older entries");
    assert.doesNotMatch(first, /data-testid="actions-newest"/);
    const second = await client.fetch(older[1].replaceAll("&amp;", "&"));
    assert.equal(second.status, 200);
    const html = await second.text();
    assert.match(html, /data-testid="actions-newest"/);
    assert.doesNotMatch(html, /data-testid="actions-older"/);
    // 90 entries: the second page holds the 40 oldest.
    assert.equal(html.match(/data-testid="action-/g)?.length, 40);
    assert.match(html, /mine o0/);

    for (
      const [query, field] of [
        ["?before=yesterday", "before"],
        ["?before=1.x.2", "before"],
        ["?before=12345678901234567.o.1", "before"],
        ["?before=1.o.1234567890123456789", "before"],
        ["?limit=0", "limit"],
        ["?limit=201", "limit"],
        ["?limit=ten", "limit"],
        ["?limit=-1", "limit"],
        ["?page=2", "page"],
      ]
    ) {
      const { status, body } = await client.json<{ error: string }>(
        "GET",
        `/api/console/actions${query}`,
      );
      assert.equal(status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.match(body.error, new RegExp(field), query);
    }
    const page = await client.fetch("/console/actions?before=yesterday");
    assert.equal(page.status, 400);
    await page.body?.cancel();
  });
});
