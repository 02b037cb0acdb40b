/**
 * The core's own migrations (lib/schema.ts): they apply on an empty
 * database, once, and make the core's objects exactly as the app's
 * database has them (the app's early migrations made them before the core
 * had migrations of its own, and its later ones are the core's).
 */
import assert from "node:assert/strict";
import { connect } from "../../lib/db/connect.ts";
import { appliedMigrations, PrivilegeError } from "../../lib/db/migrate.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import {
  MESSAGING_HISTORY,
  messagingMigrations,
  migrateMessaging,
} from "../../lib/schema.ts";
import { dumpSchema } from "../../kit/postgres/schema_dump.ts";
import { emptyDatabase, withTestDatabase } from "../_db.ts";

/** A dump's blocks (one object each, or one section), by first line. */
function blocks(dump: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const block of dump.split("\n\n")) {
    const lines = block.split("\n").filter((l) => l !== "");
    if (lines.length) out.set(lines[0], lines);
  }
  return out;
}

/** The role a GRANT or a default privilege line gives to, if one. */
function grantee(line: string): string | undefined {
  return /^(?:GRANT|ALTER DEFAULT PRIVILEGES) .* TO (\w+);$/.exec(line)?.[1];
}

Deno.test("the core's migrations apply on an empty database, once", async () => {
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 2 });
    try {
      const { logger } = memoryLogger();
      const files = (await messagingMigrations()).map((f) => f.name);
      assert.deepEqual(await migrateMessaging(sql, logger), files);
      assert.deepEqual(await migrateMessaging(sql, logger), []);
      assert.deepEqual(
        await appliedMigrations(sql, MESSAGING_HISTORY),
        [...files].sort(),
      );
    } finally {
      await sql.end();
    }
  });
});

Deno.test("the core's migrations make its objects as the app's database has them", async () => {
  let plain = "";
  await emptyDatabase(async (url) => {
    const sql = connect(url, { max: 2 });
    try {
      await migrateMessaging(sql, memoryLogger().logger);
      plain = await dumpSchema(sql);
    } finally {
      await sql.end();
    }
  });
  let app = "";
  await withTestDatabase(async ({ sql }) => {
    app = await dumpSchema(sql);
  });
  const appBlocks = blocks(app);
  const coreRoles = new Set(["PUBLIC", "console", "queue", "relay"]);
  const differences: string[] = [];
  for (const [first, lines] of blocks(plain)) {
    const theirs = appBlocks.get(first);
    if (!theirs) {
      differences.push(`not in the app's database: ${first}`);
      continue;
    }
    if (first.startsWith("-- ")) {
      // A section (roles, schemas, privileges): the app has more.
      for (const line of lines) {
        if (!theirs.includes(line)) differences.push(`missing: ${line}`);
      }
      continue;
    }
    // One object: the same, but for what the app grants its own roles.
    const own = theirs.filter((l) => coreRoles.has(grantee(l) ?? "PUBLIC"));
    if (own.join("\n") !== lines.join("\n")) {
      differences.push(
        `differs: ${first}\n  core: ${lines.join("\n  ")}\n  app:  ${
          own.join("\n  ")
        }`,
      );
    }
  }
  assert.deepEqual(differences, []);
});

Deno.test("each part of the core applies with tenancy alone, as a database that holds only it", async () => {
  // What tells each part's objects apart: a function, or the queue's table.
  const marks = {
    outbox: "platform.create_outbox_with_indexes(text)",
    inbox: "platform.create_inbox(text)",
    queue: "queue.failure_group(text, text, text)",
  } as const;
  for (const part of ["outbox", "inbox", "queue"] as const) {
    await emptyDatabase(async (url) => {
      const sql = connect(url, { max: 2 });
      try {
        const applied = await migrateMessaging(sql, memoryLogger().logger, {
          parts: [part],
        });
        assert.deepEqual(
          [...new Set(applied.map((f) => f.split("/")[0]))],
          ["tenancy", part],
        );
        const present: string[] = [];
        for (const [name, mark] of Object.entries(marks)) {
          const [{ found }] = await sql<{ found: boolean }[]>`
            select to_regprocedure(${mark}) is not null as found`
            .catch(() => [{ found: false }]);
          if (found) present.push(name);
        }
        assert.deepEqual(present, [part]);
      } finally {
        await sql.end();
      }
    });
  }
});

Deno.test("a user who may not create roles is refused in one line, before anything is applied", async () => {
  await emptyDatabase(async (url) => {
    const admin = connect(url, { max: 1 });
    const name = `t_plain_${Deno.pid}`;
    await admin`create role ${admin(name)} login password 'plain'`;
    const u = new URL(url);
    u.username = name;
    u.password = "plain";
    const sql = connect(u.toString(), { max: 1 });
    try {
      await assert.rejects(
        () => migrateMessaging(sql, memoryLogger().logger),
        (e: Error) =>
          e instanceof PrivilegeError &&
          e.message ===
            `database user ${name} must be a superuser, or have CREATEROLE and CREATE on the database, to create the roles and schemas the migrations make`,
      );
      const [{ t }] = await admin<{ t: string | null }[]>`
        select to_regclass('public.messaging_migrations')::text as t`;
      assert.equal(t, null);
    } finally {
      await sql.end();
      await admin`drop role ${admin(name)}`;
      await admin.end();
    }
  });
});
