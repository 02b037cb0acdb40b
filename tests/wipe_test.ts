import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { cutoffFor, wipeDue } from "../services/wipe.ts";
import { placeOrder } from "../services/orders/place.ts";
import { setFault } from "../lib/faults/mod.ts";
import { SessionStore } from "../lib/http/session.ts";
import type { Sql } from "../lib/db/connect.ts";
import { eventually, withTestBakery } from "./_app.ts";

Deno.test("wipe: the boundary is 10:00 UTC today, or yesterday before ten", () => {
  assert.equal(
    cutoffFor(new Date("2026-12-01T10:00:00Z")).toISOString(),
    "2026-12-01T10:00:00.000Z",
  );
  assert.equal(
    cutoffFor(new Date("2026-12-01T09:59:59Z")).toISOString(),
    "2026-11-30T10:00:00.000Z",
  );
});

Deno.test("wipe: sandboxes older than the boundary lose their rows; newer ones keep them; once per boundary", async () => {
  await withTestDatabase(async ({ sql }) => {
    const { logger } = memoryLogger();
    const now = new Date();
    const boundary = cutoffFor(now);
    const [old] = await sql`insert into platform.sandboxes (name, created_at)
      values ('old', ${new Date(
      boundary.getTime() - 86_400_000,
    )}) returning id`;
    const [fresh] = await sql`insert into platform.sandboxes (name, created_at)
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

    const result = await wipeDue(sql, logger, now);
    assert.equal(result.ran, true);
    assert.equal(result.sandboxes, 1);
    assert.ok(result.rowsDeleted >= 6, `deleted ${result.rowsDeleted}`);
    const count = async (table: string, id: string) =>
      (await sql`select count(*)::int as n from ${
        sql(table)
      } where sandbox_id = ${id}`)[0].n;
    for (
      const table of [
        "orders.orders",
        "orders.lines",
        "orders.outbox",
        "orders.events",
        "orders.commands_seen",
        "platform.faults",
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
    const [mark] =
      await sql`select wiped_at from platform.sandboxes where id = ${old.id}`;
    assert.ok(mark.wiped_at);
    assert.equal(await sessions.get(token), null);
    assert.ok(await sessions.get(kept.token));

    const again = await wipeDue(sql, logger, now);
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
