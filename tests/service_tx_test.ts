import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { asBookkeeper, asService } from "../lib/db/service.ts";

Deno.test("service transactions: bookkeeping commits asynchronously, commands keep the server's setting", async () => {
  await withTestDatabase(async ({ sql }) => {
    const [server] =
      await sql`select current_setting('synchronous_commit') as v`;
    const inCommand = await asService(
      sql,
      "orders",
      "workers",
      async ({ sql }) =>
        (await sql`select current_setting('synchronous_commit') as v`)[0].v,
    );
    assert.equal(inCommand, server.v);
    const inBookkeeping = await asBookkeeper(
      sql,
      "queue",
      async ({ sql }) =>
        (await sql`select current_setting('synchronous_commit') as v`)[0].v,
    );
    assert.equal(inBookkeeping, "off");
    // The setting ends with its transaction.
    const [after] =
      await sql`select current_setting('synchronous_commit') as v`;
    assert.equal(after.v, server.v);
  });
});

Deno.test("service transactions: afterCommit runs after a commit only; snapshot reads repeatable", async () => {
  await withTestDatabase(async ({ sql }) => {
    const ran: string[] = [];
    await asService(sql, "orders", "workers", ({ afterCommit }) => {
      afterCommit(() => ran.push("committed"));
      return Promise.resolve();
    });
    await assert.rejects(() =>
      asService(sql, "orders", "workers", ({ afterCommit }) => {
        afterCommit(() => ran.push("rolled back"));
        return Promise.reject(new Error("rollback"));
      })
    );
    assert.deepEqual(ran, ["committed"]);
    const level = await asService(
      sql,
      "console",
      "workers",
      async ({ sql }) =>
        (await sql`select current_setting('transaction_isolation') as v`)[0].v,
      { snapshot: true },
    );
    assert.equal(level, "repeatable read");
  });
});
