/**
 * Service boundaries are enforced by PostgreSQL, not by convention: a service
 * transaction reaches its own schema alone, the console reads and never
 * writes, and every service table carries a sandbox and row-level security.
 */
import assert from "node:assert/strict";
import { asService } from "../lib/db/service.ts";
import type { Sql } from "../lib/db/connect.ts";
import { withTestDatabase } from "./_db.ts";

const SERVICES = [
  "orders",
  "billing",
  "kitchen",
  "schedule",
  "dispatch",
  "crm",
  "customers",
  "receipts",
  "queue",
];

/**
 * Schemas written by another service's role: the console's own bookkeeping
 * (bulk jobs, the operator log, alert episodes) stands beside the queue, in
 * a schema of its own, and the queue's role writes it.
 */
const WRITER: Record<string, string> = { console: "queue" };

/** Every schema whose tables belong to sandboxes, each written by one role. */
const SCHEMAS = [...SERVICES, ...Object.keys(WRITER)];

/** The role that writes `schema`. */
const writerOf = (schema: string) => WRITER[schema] ?? schema;

/** Tables outside the service schemas whose rows belong to sandboxes. */
const PLATFORM_SANDBOX_TABLES = ["platform.faults"];

/**
 * Tables inside them whose rows belong to no sandbox, shared infrastructure
 * that every operator reads and only the workers write: the worker
 * processes' heartbeats (lib/ledger/workers_sql.ts), and the closure audit's
 * position per subscriber, a transaction id and a delivery id
 * (lib/ledger/audit.ts).
 */
const SHARED_TABLES = ["queue.workers", "queue.audit_positions"];

interface Ctx {
  sql: Sql;
  sandboxId: string;
  /** Runs `statement` as `service`; resolves to "ok" or the error message. */
  attempt(
    service: string,
    statement: (tx: Sql) => Promise<unknown>,
  ): Promise<string>;
}

/** A test with its own database and one sandbox in it. */
function boundaryTest(name: string, fn: (ctx: Ctx) => Promise<void>) {
  Deno.test(`boundaries: ${name}`, () =>
    withTestDatabase(async ({ sql }) => {
      const [{ id: sandboxId }] = await sql<{ id: string }[]>`
        insert into platform.tenants (name) values ('boundaries')
        returning id`;
      const attempt: Ctx["attempt"] = async (service, statement) => {
        try {
          await asService(
            sql,
            service,
            { tenantId: sandboxId },
            async ({ sql: tx }) => {
              await statement(tx as unknown as Sql);
            },
          );
          return "ok";
        } catch (error) {
          return (error as Error).message;
        }
      };
      await fn({ sql, sandboxId, attempt });
    }));
}

/** Every ordinary or partitioned table of {@link SCHEMAS}, by schema. */
async function serviceTables(sql: Sql): Promise<Map<string, string[]>> {
  const rows = await sql<{ schema: string; name: string }[]>`
    select n.nspname as schema, c.relname as name
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p') and n.nspname = any(${SCHEMAS})
     order by 1, 2`;
  const bySchema = new Map<string, string[]>();
  for (const { schema, name } of rows) {
    bySchema.set(schema, [...bySchema.get(schema) ?? [], name]);
  }
  return bySchema;
}

/**
 * The tables of the service schemas (and the platform's sandboxed tables)
 * that lack a `tenant_id` column, row level security or a policy, each with
 * what it lacks. Empty when every table is guarded.
 */
async function unguardedTables(sql: Sql): Promise<string[]> {
  const rows = await sql<
    { table: string; has_column: boolean; rls: boolean; policies: number }[]
  >`
    select format('%I.%I', n.nspname, c.relname) as table,
           exists (select 1 from pg_attribute a
                    where a.attrelid = c.oid and a.attname = 'tenant_id'
                      and not a.attisdropped) as has_column,
           c.relrowsecurity as rls,
           (select count(*)::int from pg_policy p where p.polrelid = c.oid)
             as policies
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p')
       and (n.nspname = any(${SCHEMAS})
            or format('%I.%I', n.nspname, c.relname)
               = any(${PLATFORM_SANDBOX_TABLES}))
     order by 1`;
  // 10 schemas and platform.faults: far more than one table, or the query is
  // looking in the wrong place.
  assert.ok(rows.length >= 10, `only ${rows.length} tables found`);
  return rows.flatMap((r) => {
    if (SHARED_TABLES.includes(r.table)) return [];
    const missing = [
      ...r.has_column ? [] : ["tenant_id"],
      ...r.rls ? [] : ["row level security"],
      ...r.policies > 0 ? [] : ["policy"],
    ];
    return missing.length ? [`${r.table}: missing ${missing.join(", ")}`] : [];
  });
}

boundaryTest(
  "orders may not read or write the kitchen's tables; the kitchen may",
  async ({ sql, sandboxId, attempt }) => {
    const messageId = crypto.randomUUID();
    const insert = (tx: Sql) =>
      tx`insert into kitchen.inbox (message_id, tenant_id, type, status)
        values (${messageId}, ${sandboxId}, 'OrderPlaced', 200)`;
    const read = (tx: Sql) => tx`select count(*) from kitchen.inbox`;

    assert.match(await attempt("orders", read), /permission denied/);
    assert.match(await attempt("orders", insert), /permission denied/);
    assert.equal(await attempt("kitchen", insert), "ok");
    assert.equal(await attempt("kitchen", read), "ok");
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from kitchen.inbox
       where message_id = ${messageId} and tenant_id = ${sandboxId}`;
    assert.equal(row.n, 1);
  },
);

boundaryTest(
  "a transaction that spans two services fails and leaves nothing",
  async ({ sql, sandboxId }) => {
    const messageId = crypto.randomUUID();
    await assert.rejects(
      () =>
        asService(
          sql,
          "kitchen",
          { tenantId: sandboxId },
          async ({ sql: tx }) => {
            await tx`insert into kitchen.inbox
            (message_id, tenant_id, type, status)
            values (${messageId}, ${sandboxId}, 'OrderPaid', 200)`;
            await tx`insert into receipts.inbox
            (message_id, tenant_id, type, status)
            values (${messageId}, ${sandboxId}, 'OrderPaid', 200)`;
          },
        ),
      /permission denied for schema receipts/,
    );
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from kitchen.inbox
       where message_id = ${messageId}`;
    assert.equal(row.n, 0, "the kitchen's half was rolled back");
  },
);

boundaryTest(
  "every service role reads its own schema and no other",
  async ({ sql, attempt }) => {
    const tables = await serviceTables(sql);
    assert.deepEqual([...tables.keys()].sort(), [...SCHEMAS].sort());
    const wrong: string[] = [];
    for (const role of SERVICES) {
      for (const [schema, names] of tables) {
        for (const table of names) {
          const result = await attempt(
            role,
            (tx) => tx`select 1 from ${tx(schema)}.${tx(table)} limit 1`,
          );
          if (role === writerOf(schema) && result !== "ok") {
            wrong.push(`${role} cannot read ${schema}.${table}: ${result}`);
          }
          if (role !== writerOf(schema) && !/permission denied/.test(result)) {
            wrong.push(`${role} reads ${schema}.${table}: ${result}`);
          }
        }
      }
    }
    assert.deepEqual(wrong, []);
  },
);

boundaryTest(
  "every service role writes its own schema and no other",
  async ({ sql, attempt }) => {
    const tables = await serviceTables(sql);
    const wrong: string[] = [];
    for (const role of SERVICES) {
      for (const [schema, names] of tables) {
        for (const table of names) {
          // A delete needs no column values; with no rows it changes nothing
          // where it is allowed and is refused where it is not.
          const result = await attempt(
            role,
            (tx) => tx`delete from ${tx(schema)}.${tx(table)}`,
          );
          if (role === writerOf(schema) && result !== "ok") {
            wrong.push(`${role} cannot write ${schema}.${table}: ${result}`);
          }
          if (role !== writerOf(schema) && !/permission denied/.test(result)) {
            wrong.push(`${role} writes ${schema}.${table}: ${result}`);
          }
        }
      }
    }
    assert.deepEqual(wrong, []);
  },
);

boundaryTest(
  "the console reads every service table and writes none",
  async ({ sql, sandboxId, attempt }) => {
    const tables = await serviceTables(sql);
    const wrong: string[] = [];
    for (const [schema, names] of tables) {
      for (const table of names) {
        const read = await attempt(
          "console",
          (tx) => tx`select count(*) from ${tx(schema)}.${tx(table)}`,
        );
        if (read !== "ok") {
          wrong.push(`cannot read ${schema}.${table}: ${read}`);
        }
        const write = await attempt(
          "console",
          (tx) => tx`delete from ${tx(schema)}.${tx(table)}`,
        );
        if (!/permission denied/.test(write)) {
          wrong.push(`deletes from ${schema}.${table}: ${write}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
    const insert = await attempt(
      "console",
      (tx) =>
        tx`insert into kitchen.inbox (message_id, tenant_id, type, status)
          values (${crypto.randomUUID()}, ${sandboxId}, 'OrderPlaced', 200)`,
    );
    assert.match(insert, /permission denied for table inbox/);
    const update = await attempt(
      "console",
      (tx) => tx`update queue.deliveries set attempts = attempts + 1`,
    );
    assert.match(update, /permission denied for table deliveries/);
  },
);

boundaryTest(
  "every service table has tenant_id and row level security",
  async ({ sql }) => {
    assert.deepEqual(await unguardedTables(sql), []);
  },
);

boundaryTest("a table that forgets its sandbox is caught", async ({ sql }) => {
  // Proves that the catalog check above can fail: in a transaction that is
  // rolled back, add a table with no sandbox and one with no row level
  // security.
  let found: string[] = [];
  const rollback = new Error("rollback");
  await sql.begin(async (tx) => {
    await tx`create table kitchen.forgotten (id int)`;
    await tx`create table dispatch.open_to_all (tenant_id uuid not null)`;
    found = (await unguardedTables(tx as unknown as Sql))
      .filter((t) => /^(kitchen\.forgotten|dispatch\.open_to_all):/.test(t));
    throw rollback;
  }).catch((error) => {
    if (error !== rollback) throw error;
  });
  assert.deepEqual(found, [
    "dispatch.open_to_all: missing row level security, policy",
    "kitchen.forgotten: missing tenant_id, row level security, policy",
  ]);
  const [left] = await sql`select to_regclass('kitchen.forgotten') as t`;
  assert.equal(left.t, null);
});
