/**
 * Each test file gets its own database, cloned from the template that
 * tests/run.ts migrated once: isolated, and ready in milliseconds.
 */
import { connect, type Sql, withDatabase } from "../lib/db/connect.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";

export interface TestDatabase {
  url: string;
  sql: Sql;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

export function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(
      `${name} is not set: run the tests with 'deno task test', which starts PostgreSQL`,
    );
  }
  return value;
}

/** The server's superuser URL, for tests that create or drop databases. */
export function adminUrl(): string {
  return env("TEST_ADMIN_URL");
}

/** How a test database is made. */
export interface TestDatabaseOptions {
  max?: number;
  /** The template it is cloned from (default: the app's migrated one). */
  template?: string;
}

/** A fresh migrated database for one test or one file. */
export async function testDatabase(
  options: TestDatabaseOptions = {},
): Promise<TestDatabase> {
  // Unique without a counter: with `deno test --parallel` several files
  // share this process, each with its own copy of this module.
  const name = `t_${env("TEST_RUN_ID")}_${
    crypto.randomUUID().replaceAll("-", "").slice(0, 12)
  }`;
  await ensureDatabase(
    adminUrl(),
    name,
    options.template ?? env("TEST_TEMPLATE_DB"),
  );
  const url = withDatabase(adminUrl(), name);
  const sql = connect(url, { max: options.max ?? 10, applicationName: "test" });
  return {
    url,
    sql,
    drop: async () => {
      await sql.end({ timeout: 5 });
      const admin = connect(adminUrl(), { max: 1 });
      try {
        await admin`drop database if exists ${admin(name)} with (force)`;
      } finally {
        await admin.end();
      }
    },
  };
}

/** Runs `fn` with a fresh database and always drops it after. */
export async function withTestDatabase(
  fn: (db: TestDatabase) => Promise<void>,
  options?: TestDatabaseOptions,
) {
  const db = await testDatabase(options);
  try {
    await fn(db);
  } finally {
    await db.drop();
  }
}

/** An empty database (not cloned from the migrated template). */
export async function emptyDatabase(fn: (url: string) => Promise<void>) {
  const name = `t_empty_${Deno.pid}_${crypto.randomUUID().slice(0, 8)}`;
  await ensureDatabase(adminUrl(), name);
  try {
    await fn(withDatabase(adminUrl(), name));
  } finally {
    const admin = connect(adminUrl(), { max: 1 });
    await admin`drop database if exists ${admin(name)} with (force)`;
    await admin.end();
  }
}
