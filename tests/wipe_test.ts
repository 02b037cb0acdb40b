import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { wipeDue } from "../services/wipe.ts";
import { servicePools } from "../services/databases.ts";
import { placeOrder } from "../services/orders/place.ts";
import { setFault } from "../lib/faults/mod.ts";
import { TenantClosed } from "../lib/db/closed.ts";
import { SessionStore } from "../kit/http/session.ts";
import type { Sql } from "../lib/db/connect.ts";
import {
  eventually,
  signIn,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

/** The boundary at or before `at`, as the database computes it. */
async function cutoffFor(sql: Sql, at: Date): Promise<Date> {
  const [{ cutoff }] = await sql<{ cutoff: Date }[]>`
    select platform.wipe_cutoff(${at}::timestamptz) as cutoff`;
  return cutoff;
}

Deno.test("wipe: the boundary is 10:00 UTC today, or yesterday before ten", async () => {
  await withTestDatabase(async ({ sql }) => {
    // The session's time zone does not move it.
    await sql`set timezone = 'Pacific/Auckland'`;
    assert.equal(
      (await cutoffFor(sql, new Date("2026-12-01T10:00:00Z"))).toISOString(),
      "2026-12-01T10:00:00.000Z",
    );
    assert.equal(
      (await cutoffFor(sql, new Date("2026-12-01T09:59:59Z"))).toISOString(),
      "2026-11-30T10:00:00.000Z",
    );
  }, { max: 1 });
});

Deno.test("wipe: sandboxes older than the boundary lose their rows; newer ones keep them; once per boundary", async () => {
  await withTestDatabase(async ({ sql }) => {
    const { logger } = memoryLogger();
    const now = new Date();
    const boundary = await cutoffFor(sql, now);
    const [old] = await sql`insert into platform.tenants (name, created_at)
      values ('old', ${new Date(
      boundary.getTime() - 86_400_000,
    )}) returning id`;
    const [fresh] = await sql`insert into platform.tenants (name, created_at)
      values ('fresh', ${new Date(boundary.getTime() + 1)}) returning id`;
    const order = (sandboxId: string) =>
      placeOrder(sql, sandboxId, {
        items: [{ sku: "cardamom-bun", qty: 1 }],
        customer: { name: "A", email: "a@example.com" },
        fulfilment: "pickup",
        idempotencyKey: crypto.randomUUID(),
      });
    await order(old.id);
    await order(fresh.id);
    await setFault(sql, old.id, "kitchenRefuses", true);
    const sessions = new SessionStore(sql);
    const { token } = await sessions.create(old.id, "Ada");
    const kept = await sessions.create(fresh.id, "Bo");
    // The console's own tables beside the queue, in their schema.
    for (const { id } of [old, fresh]) {
      await sql`insert into console.operator_actions
        (tenant_id, actor, action, target, count)
        values (${id}, 'Ada', 'redrive', '{}', 1)`;
      await sql`insert into console.bulk_jobs
        (id, tenant_id, action, ids, total, rate_per_second, actor)
        values (${crypto.randomUUID()}, ${id}, 'redrive', '{1}', 1, 50, 'Ada')`;
      await sql`insert into console.alert_episodes
        (tenant_id, kind, subject, state, value, threshold, since)
        values (${id}, 'dead_letters', 'kitchen', 'firing', 3, 1, now())`;
    }
    const consoleTables = [
      "console.operator_actions",
      "console.bulk_jobs",
      "console.alert_episodes",
    ];

    const result = await wipeDue(sql, logger, { at: now });
    assert.equal(result.ran, true);
    assert.equal(result.sandboxes, 1);
    assert.ok(result.rowsDeleted >= 6, `deleted ${result.rowsDeleted}`);
    const count = async (table: string, id: string) =>
      (await sql`select count(*)::int as n from ${
        sql(table)
      } where tenant_id = ${id}`)[0].n;
    for (
      const table of [
        "orders.orders",
        "orders.lines",
        "orders.outbox",
        "orders.events",
        "orders.commands_seen",
        "platform.faults",
        ...consoleTables,
      ]
    ) {
      assert.equal(
        await count(table, old.id),
        0,
        `${table} of the old sandbox`,
      );
    }
    assert.equal(await count("orders.orders", fresh.id), 1);
    assert.equal(await count("orders.outbox", fresh.id), 1);
    for (const table of consoleTables) {
      assert.equal(
        await count(table, fresh.id),
        1,
        `${table} of the fresh one`,
      );
    }
    const [mark] =
      await sql`select wiped_at from platform.tenants where id = ${old.id}`;
    assert.ok(mark.wiped_at);
    assert.equal(await sessions.get(token), null);
    assert.ok(await sessions.get(kept.token));

    const again = await wipeDue(sql, logger, { at: now });
    assert.equal(again.ran, false);
    const [w] = await sql`select count(*)::int as n from platform.wipes
      where cutoff = ${boundary} and finished_at is not null`;
    assert.equal(w.n, 1);
  });
});

Deno.test("wipe: the bakery schedules it unless SANDBOX_WIPE is off", async () => {
  const wipes = async (sql: Sql) =>
    (await sql<{ n: number }[]>`
      select count(*)::int as n from platform.wipes
       where finished_at is not null`)[0].n;
  await withTestBakery(async ({ sql }) => {
    await eventually(
      "the first scheduled wipe",
      async () => await wipes(sql) === 1,
      5_000,
    );
  }, { SANDBOX_WIPE: "on" });
  await withTestBakery(async ({ sql }) => {
    // The schedule's first run comes one second after the start.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await wipes(sql), 0);
  });
});

Deno.test("wipe: one that could not finish leaves its sandboxes closed, and the next run finishes them", async () => {
  await withTestDatabase(async ({ sql }) => {
    const { logger } = memoryLogger("error");
    const sandbox = async (name: string) =>
      (await sql<{ id: string }[]>`
        insert into platform.tenants (name, created_at)
        values (${name}, now() - interval '2 days') returning id`)[0].id;
    const order = (sandboxId: string) =>
      placeOrder(sql, sandboxId, {
        items: [{ sku: "cardamom-bun", qty: 1 }],
        customer: { name: "A", email: "a@example.com" },
        fulfilment: "pickup",
        idempotencyKey: crypto.randomUUID(),
      });
    const orders = async (sandboxId: string) =>
      (await sql<{ n: number }[]>`
        select count(*)::int as n from orders.orders
         where tenant_id = ${sandboxId}`)[0].n;
    const state = async (sandboxId: string) =>
      (await sql<{ wiping: boolean; wiped: boolean }[]>`
        select wiping_at is not null as wiping, wiped_at is not null as wiped
          from platform.tenants where id = ${sandboxId}`)[0];
    const old = await sandbox("old");
    await order(old);

    // A transaction that began before the wipe and does not end: the fence
    // waits for it, then gives up.
    const held = await sql.reserve();
    try {
      await held`begin`;
      await held`select 1`;
      await assert.rejects(
        wipeDue(sql, logger, { fenceMs: 200 }),
        /gave up waiting for transactions/,
      );
    } finally {
      await held`rollback`;
      held.release();
    }
    assert.deepEqual(await state(old), { wiping: true, wiped: false });
    assert.equal(await orders(old), 1, "nothing deleted yet");
    await assert.rejects(order(old), TenantClosed, "closed meanwhile");
    const [failed] = await sql<{ error: string | null; finished: boolean }[]>`
      select error, finished_at is not null as finished from platform.wipes`;
    assert.match(failed.error ?? "", /gave up/);
    assert.equal(failed.finished, false);

    const retried = await wipeDue(sql, logger);
    assert.equal(retried.ran, true);
    assert.equal(retried.sandboxes, 1);
    assert.deepEqual(await state(old), { wiping: true, wiped: true });
    assert.equal(await orders(old), 0);

    // A sandbox left wiping (as the migration leaves one that the old wipe
    // marked wiped) is finished even when the day's wipe is done.
    const left = await sandbox("left");
    await order(left);
    await sql`update platform.tenants set wiping_at = now() where id = ${left}`;
    assert.equal((await wipeDue(sql, logger)).sandboxes, 1);
    assert.deepEqual(await state(left), { wiping: true, wiped: true });
    assert.equal(await orders(left), 0);
    assert.equal((await wipeDue(sql, logger)).ran, false, "nothing left");
  });
});

Deno.test("wipe: an order of a sandbox being wiped is a 410 in the bakery's words, and a row", async () => {
  await withTestBakery(async ({ sql, client }) => {
    const visitor = client();
    const { sandboxId } = await signIn(visitor, "Ada");
    // Closed as the wipe's first step closes it: in the console's database,
    // and in split mode a closed copy in each other one, whose gate reads
    // its own (tests/split_console_ops_test.ts runs the wipe itself).
    const [tenant] = await sql`
      update platform.tenants set wiping_at = now() where id = ${sandboxId}
      returning id, name, created_at, wiping_at`;
    const others = servicePools(sql).filter((pool) => pool !== sql);
    for (const pool of others) {
      await pool`insert into platform.tenants ${pool(tenant)}
                 on conflict (id) do update set wiping_at = excluded.wiping_at`;
    }
    const { status, body } = await visitor.json<{ error: string }>(
      "POST",
      "/api/orders",
      walkthroughOrder(),
    );
    assert.equal(status, 410);
    assert.match(body.error, new RegExp(`^sandbox ${sandboxId} is closed`));
    // Recorded in the database whose gate refused it.
    const rows: { what: string; reason: string }[] = [];
    for (const pool of [sql, ...others]) {
      rows.push(
        ...await pool<{ what: string; reason: string }[]>`
          select what, reason from platform.closed_refusals
           where tenant_id = ${sandboxId}`,
      );
    }
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { what: "request", reason: body.error },
    ]);
  });
});
