/**
 * Row level security keeps one sandbox from reading or changing another's
 * rows, as every service sees them; a transaction that names no sandbox sees
 * nothing; only the workers' scope sees every sandbox.
 */
import assert from "node:assert/strict";
import { asService } from "../lib/db/service.ts";
import type { Sql } from "../lib/db/connect.ts";
import { withTestDatabase } from "./_db.ts";

interface Ctx {
  sql: Sql;
  a: string;
  b: string;
  /** The message ids of the kitchen inbox rows of sandbox A and of B. */
  rowsOf: { a: string[]; b: string[] };
}

/**
 * A test with its own database holding sandboxes A and B, each with two rows
 * in kitchen.inbox written by the kitchen in that sandbox. One connection, so
 * that every transaction of the test runs on the same session.
 */
function rlsTest(name: string, fn: (ctx: Ctx) => Promise<void>) {
  Deno.test(`sandbox rls: ${name}`, () =>
    withTestDatabase(async ({ sql }) => {
      const [{ id: a }, { id: b }] = await sql<{ id: string }[]>`
        insert into platform.tenants (name) values ('A'), ('B')
        returning id`;
      const rowsOf = { a: [] as string[], b: [] as string[] };
      for (const [sandboxId, ids] of [[a, rowsOf.a], [b, rowsOf.b]] as const) {
        await asService(
          sql,
          "kitchen",
          { tenantId: sandboxId },
          async ({ sql: tx }) => {
            for (const type of ["OrderPlaced", "OrderPaid"]) {
              const messageId = crypto.randomUUID();
              await tx`insert into kitchen.inbox
              (message_id, tenant_id, type, status)
              values (${messageId}, ${sandboxId}, ${type}, 200)`;
              ids.push(messageId);
            }
          },
        );
      }
      await fn({ sql, a, b, rowsOf });
    }, { max: 1 }));
}

/** The message ids that the kitchen sees in `scope`, sorted. */
function kitchenSees(
  sql: Sql,
  scope: { tenantId: string } | "workers",
): Promise<string[]> {
  return asService(sql, "kitchen", scope, async ({ sql: tx }) => {
    const rows = await tx<{ message_id: string }[]>`
      select message_id from kitchen.inbox order by message_id`;
    return rows.map((r) => r.message_id);
  });
}

/** All kitchen inbox rows as the superuser sees them, for before/after. */
async function allRows(sql: Sql) {
  return [
    ...await sql`select message_id, tenant_id, type, status
      from kitchen.inbox order by message_id`,
  ];
}

rlsTest("a sandbox reads its own rows and not the other's", async (ctx) => {
  const { sql, a, b, rowsOf } = ctx;
  assert.deepEqual(await kitchenSees(sql, { tenantId: a }), rowsOf.a.sort());
  assert.deepEqual(await kitchenSees(sql, { tenantId: b }), rowsOf.b.sort());
  const found = await asService(
    sql,
    "kitchen",
    { tenantId: a },
    async ({ sql: tx }) =>
      await tx`select * from kitchen.inbox
        where message_id = ${rowsOf.b[0]} or tenant_id = ${b}`,
  );
  assert.equal(found.length, 0);
});

rlsTest("a sandbox cannot update or delete the other's rows", async (ctx) => {
  const { sql, a, b, rowsOf } = ctx;
  const before = await allRows(sql);
  const counts = await asService(
    sql,
    "kitchen",
    { tenantId: a },
    async ({ sql: tx }) => {
      const updated = await tx`update kitchen.inbox set status = 422
        where tenant_id = ${b}`;
      const updatedById = await tx`update kitchen.inbox set type = 'Changed'
        where message_id = ${rowsOf.b[0]}`;
      const deleted = await tx`delete from kitchen.inbox
        where message_id = any(${rowsOf.b})`;
      return [updated.count, updatedById.count, deleted.count];
    },
  );
  assert.deepEqual(counts, [0, 0, 0]);
  assert.deepEqual(await allRows(sql), before);

  // The same statements in B's own sandbox do change B's rows: the zeros above
  // are the policy at work, not statements that could never match.
  const own = await asService(
    sql,
    "kitchen",
    { tenantId: b },
    async ({ sql: tx }) => {
      const updated = await tx`update kitchen.inbox set status = 422
        where tenant_id = ${b}`;
      const deleted = await tx`delete from kitchen.inbox
        where message_id = ${rowsOf.b[0]}`;
      return [updated.count, deleted.count];
    },
  );
  assert.deepEqual(own, [2, 1]);
});

rlsTest("a sandbox cannot write a row into the other", async (ctx) => {
  const { sql, a, b } = ctx;
  const before = await allRows(sql);
  await assert.rejects(
    () =>
      asService(sql, "kitchen", { tenantId: a }, async ({ sql: tx }) => {
        await tx`insert into kitchen.inbox
          (message_id, tenant_id, type, status)
          values (${crypto.randomUUID()}, ${b}, 'OrderPlaced', 200)`;
      }),
    /new row violates row-level security policy for table "inbox"/,
  );
  // Nor move one of its own rows over.
  await assert.rejects(
    () =>
      asService(sql, "kitchen", { tenantId: a }, async ({ sql: tx }) => {
        await tx`update kitchen.inbox set tenant_id = ${b}
          where tenant_id = ${a}`;
      }),
    /new row violates row-level security policy for table "inbox"/,
  );
  assert.deepEqual(await allRows(sql), before);
});

rlsTest(
  "a transaction that names no sandbox sees and writes nothing",
  async (ctx) => {
    const { sql, a } = ctx;
    // Right before, a service transaction of sandbox A on the same (only)
    // connection: its SET LOCAL settings must have ended with it.
    assert.equal((await kitchenSees(sql, { tenantId: a })).length, 2);
    const seen = await sql.begin(async (tx) => {
      await tx`select set_config('role', 'kitchen', true)`;
      const [who] = await tx`select current_user as role`;
      assert.equal(who.role, "kitchen");
      return await tx`select * from kitchen.inbox`;
    });
    assert.equal(seen.length, 0);
    await assert.rejects(
      () =>
        sql.begin(async (tx) => {
          await tx`select set_config('role', 'kitchen', true)`;
          await tx`insert into kitchen.inbox
          (message_id, tenant_id, type, status)
          values (${crypto.randomUUID()}, ${a}, 'OrderPlaced', 200)`;
        }),
      /new row violates row-level security policy for table "inbox"/,
    );
  },
);

rlsTest("the workers' scope sees every sandbox", async (ctx) => {
  const { sql, rowsOf } = ctx;
  assert.deepEqual(
    await kitchenSees(sql, "workers"),
    [...rowsOf.a, ...rowsOf.b].sort(),
  );
});

rlsTest("other services see their own tables by sandbox too", async (ctx) => {
  const { sql, a, b } = ctx;
  // One row per sandbox in queue.messages and in platform.faults, written as
  // the queue (workers' scope) and the superuser.
  await asService(sql, "queue", "workers", async ({ sql: tx }) => {
    for (const sandboxId of [a, b]) {
      await tx`insert into queue.messages
        (message_id, tenant_id, source, type, aggregate_id, envelope)
        values (${crypto.randomUUID()}, ${sandboxId}, 'orders',
                'OrderPlaced', 'O1', '{}')`;
    }
  });
  await sql`insert into platform.faults (tenant_id, name, enabled)
    values (${a}, 'kitchenRefuses', true), (${b}, 'kitchenRefuses', false)`;
  for (const sandboxId of [a, b]) {
    const [messages, faults] = await asService(
      sql,
      "queue",
      { tenantId: sandboxId },
      async ({ sql: tx }) => [
        await tx`select tenant_id from queue.messages`,
        await tx`select tenant_id from platform.faults`,
      ],
    );
    assert.deepEqual(messages.map((r) => r.tenant_id), [sandboxId]);
    assert.deepEqual(faults.map((r) => r.tenant_id), [sandboxId]);
  }
});
