/**
 * The Workers page in split mode (services/databases.ts): a process beats
 * into the database of each sender's queue it works, under one id, and the
 * console, which reads every queue's, lists it once, live, with its roles;
 * /metrics counts it once too.
 */
import assert from "node:assert/strict";
import { SPLIT_DATABASES } from "../services/databases.ts";
import { SENDERS } from "../services/routing.ts";
import { signIn, withTestBakery } from "./_app.ts";

const SPLIT = { SERVICE_DATABASES: "split" };

Deno.test("split mode: the process's heartbeat is listed once, live, with its roles", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Workers operator");
    const { status, body } = await client.json<{
      items: { id: string; state: string; roles: string[]; pid: number }[];
    }>("GET", "/api/console/workers");
    assert.equal(status, 200, JSON.stringify(body));
    const ours = body.items.filter((w) => w.pid === Deno.pid);
    assert.equal(ours.length, 1, JSON.stringify(body.items));
    assert.equal(ours[0].state, "live");
    assert.deepEqual([...ours[0].roles].sort(), ["consume", "relay"]);

    // Its row is in the database of each sender it works, one id in all.
    const holders: string[] = [];
    for (const db of SPLIT_DATABASES.filter((d) => d.queueSlot)) {
      const sql = t.databases!.pools.get(db.name)!;
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from queue.workers where id = ${ours[0].id}`;
      if (row.n > 0) holders.push(db.name);
    }
    assert.deepEqual(holders.sort(), [...SENDERS].sort());

    const page = await (await client.fetch("/console/workers")).text();
    assert.match(page, new RegExp(String(Deno.pid)));

    const metrics = await (await fetch(new URL("/metrics", t.url))).text();
    assert.match(metrics, /^bakery_workers\{state="live"\} 1$/m);
    assert.match(metrics, /^bakery_workers_live_by_role\{role="relay"\} 1$/m);
  }, SPLIT);
});
