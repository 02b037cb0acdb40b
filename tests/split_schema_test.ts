/**
 * Split mode's databases (services/databases.ts): each holds its own
 * service's tables and what the messaging core needs there, nothing of
 * another service, and the same schema as that service has in the shared
 * database.
 */
import assert from "node:assert/strict";
import { connect, type Sql, withDatabase } from "../lib/db/connect.ts";
import { createLogger } from "../lib/log/mod.ts";
import { dropDatabases, ensureDatabase } from "../kit/postgres/open.ts";
import { migrateServiceDatabase } from "../kit/postgres/migrate.ts";
import { dumpSchema } from "../kit/postgres/schema_dump.ts";
import {
  databaseName,
  databaseNames,
  QUEUE_SLOTS,
  queueOfDelivery,
  type ServiceDatabase,
  serviceDatabaseUrls,
  SPLIT_DATABASES,
} from "../services/databases.ts";
import { adminUrl, env, withTestDatabase } from "./_db.ts";

const log = createLogger("error");

/** The tables the core's tenancy part makes in every database. */
const TENANCY_TABLES = [
  "platform.closed_refusals",
  "platform.faults",
  "platform.tenants",
];

/** Every service that has a schema of its own. */
const SERVICES = SPLIT_DATABASES.filter((d) => d.ownSchema).map((d) => d.name);

async function tables(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select schemaname || '.' || tablename as name from pg_tables
     where schemaname not in ('pg_catalog', 'information_schema')
     order by 1`;
  return rows.map((r) => r.name);
}

/**
 * The statements of a schema dump that name `schema`: its objects, its
 * grants, its default privileges. A statement runs from a line that
 * begins with a keyword of the dump, a comment or a blank line to the
 * next such line.
 */
function statementsOf(dump: string, schema: string): string[] {
  const statements: string[] = [];
  for (const line of dump.split("\n")) {
    if (
      /^((CREATE|ALTER|GRANT|COMMENT)\b|--|$)/.test(line) || !statements.length
    ) {
      statements.push(line);
    } else {
      statements[statements.length - 1] += `\n${line}`;
    }
  }
  const names = new RegExp(`((?<![\\w.])${schema}\\.|SCHEMA ${schema}\\b)`);
  return statements.map((s) => s.trim()).filter((s) => names.test(s)).sort();
}

/** Makes and migrates every split database; drops them after `fn`. */
async function withSplitDatabases(
  fn: (urls: Map<string, string>) => Promise<void>,
) {
  const base = `split_${env("TEST_RUN_ID")}_${Deno.pid}`;
  const urls = serviceDatabaseUrls(withDatabase(adminUrl(), base));
  try {
    for (const db of SPLIT_DATABASES) {
      const url = urls.get(db.name)!;
      await ensureDatabase(adminUrl(), databaseName(url));
      const sql = connect(url, { max: 1 });
      try {
        await migrateServiceDatabase(sql, log, db);
      } finally {
        await sql.end();
      }
    }
    await fn(urls);
  } finally {
    await dropDatabases(adminUrl(), databaseNames(urls));
  }
}

async function eachDatabase(
  urls: Map<string, string>,
  fn: (db: ServiceDatabase, sql: Sql) => Promise<void>,
) {
  for (const db of SPLIT_DATABASES) {
    const sql = connect(urls.get(db.name)!, { max: 1 });
    try {
      await fn(db, sql);
    } finally {
      await sql.end();
    }
  }
}

Deno.test("split mode: each database holds its own service's tables only", async () => {
  await withSplitDatabases(async (urls) => {
    await eachDatabase(urls, async (db, sql) => {
      const found = await tables(sql);
      const own = found.filter((t) => t.startsWith(`${db.name}.`));
      const rest = found.filter((t) => !own.includes(t));
      const expected = [
        ...TENANCY_TABLES,
        ...db.name === "console" ? ["platform.sessions", "platform.wipes"] : [],
        "public.messaging_migrations",
        "public.schema_migrations",
      ];
      // The console's own tables (its schema, `console`) stand beside each
      // queue; the console's database has none.
      const besideQueue = (t: string) =>
        t.startsWith("queue.") || t.startsWith("console.");
      assert.deepEqual(
        rest.filter((t) => !besideQueue(t)),
        expected.sort(),
        `${db.name}: tables outside its schema and the queue`,
      );
      assert.equal(
        rest.some((t) => t.startsWith("queue.")),
        db.parts.includes("queue"),
        `${db.name}: a queue where it sends`,
      );
      assert.deepEqual(
        rest.filter((t) => t.startsWith("console.")),
        db.parts.includes("queue")
          ? [
            "console.alert_episodes",
            "console.bulk_jobs",
            "console.operator_actions",
          ]
          : [],
        `${db.name}: the console's tables beside its queue`,
      );
      assert.equal(own.length > 0, db.ownSchema, `${db.name}: its own tables`);
      assert.deepEqual(
        await migrateServiceDatabase(sql, log, db),
        [],
        `${db.name}: migrated again, nothing to apply`,
      );
      assert.equal(
        own.includes(`${db.name}.outbox`),
        db.parts.includes("outbox"),
        `${db.name}: an outbox where it sends`,
      );
      assert.equal(
        own.includes(`${db.name}.inbox`),
        db.parts.includes("inbox"),
        `${db.name}: an inbox where it receives`,
      );
      const schemas = await sql<{ name: string }[]>`
        select nspname as name from pg_namespace
         where nspname = any(${SERVICES})`;
      assert.deepEqual(
        schemas.map((s) => s.name),
        db.ownSchema ? [db.name] : [],
        `${db.name}: no other service's schema`,
      );
    });
  });
});

Deno.test("split mode: a service's schema is the one it has in the shared database", async () => {
  await withTestDatabase(async ({ sql: shared }) => {
    const whole = await dumpSchema(shared);
    await withSplitDatabases(async (urls) => {
      await eachDatabase(urls, async (db, sql) => {
        const own = await dumpSchema(sql);
        const schemas = [
          ...db.ownSchema ? [db.name] : [],
          ...db.parts.includes("queue") ? ["queue", "console"] : [],
        ];
        // A queue's delivery ids step by 8 from its slot; the rest of the
        // queue's schema is the shared one's.
        const ids = /^CREATE SEQUENCE queue\.deliveries_id_seq .*$/m;
        for (const schema of schemas) {
          assert.deepEqual(
            statementsOf(own, schema).filter((s) => !ids.test(s)),
            statementsOf(whole, schema).filter((s) => !ids.test(s)),
            `${db.name}: schema ${schema}`,
          );
        }
        if (db.queueSlot !== undefined) {
          assert.match(
            own.match(ids)?.[0] ?? "",
            new RegExp(` START ${db.queueSlot} INCREMENT ${QUEUE_SLOTS} `),
          );
        }
      });
    });
  });
});

Deno.test("split mode: DATABASE_URL_<SERVICE> moves one service elsewhere", () => {
  const urls = serviceDatabaseUrls(
    "postgres://app@db.internal:5432/bakery",
    { kitchen: "postgres://app@kitchen.internal:5432/cards" },
  );
  assert.equal(
    urls.get("kitchen"),
    "postgres://app@kitchen.internal:5432/cards",
  );
  assert.equal(
    urls.get("orders"),
    "postgres://app@db.internal:5432/bakery_orders",
  );
  assert.deepEqual([...urls.keys()], SPLIT_DATABASES.map((d) => d.name));
});

Deno.test("split mode: a delivery's id names its queue", async () => {
  await withSplitDatabases(async (urls) => {
    const made: [string, number][] = [];
    for (const db of SPLIT_DATABASES.filter((d) => d.queueSlot)) {
      const sql = connect(urls.get(db.name)!, { max: 1 });
      try {
        // Three ids drawn as the queue draws them.
        for (let i = 0; i < 3; i++) {
          const [row] = await sql<{ id: string }[]>`
            select nextval(pg_get_serial_sequence('queue.deliveries', 'id'))
              as id`;
          made.push([db.name, Number(row.id)]);
        }
      } finally {
        await sql.end();
      }
    }
    assert.equal(new Set(made.map(([, id]) => id)).size, made.length);
    for (const [name, id] of made) assert.equal(queueOfDelivery(id), name);
    assert.deepEqual(
      made.filter(([name]) => name === "orders").map(([, id]) => id),
      [1, 9, 17],
    );
  });
});
