/**
 * migrations/schema.sql is the schema the migrations make: a change to the
 * migrations is reviewed as a change to that file (`deno task schema`
 * rewrites it).
 */
import assert from "node:assert/strict";
import { connect } from "../lib/db/connect.ts";
import { dumpSchema, SCHEMA_FILE } from "../kit/postgres/schema_dump.ts";
import { withTestDatabase } from "./_db.ts";
import { lineDiff } from "./_line_diff.ts";

Deno.test("a migrated database has the schema of migrations/schema.sql", async () => {
  // The test template was migrated with migrations/ by tests/run.ts, and
  // each test database is a copy of it.
  await withTestDatabase(async ({ sql }) => {
    const migrated = await dumpSchema(sql);
    const checked = await Deno.readTextFile(SCHEMA_FILE).catch(() => null);
    if (checked === null) {
      assert.fail(
        "migrations/schema.sql is missing: run `deno task schema` and commit it",
      );
    }
    if (migrated !== checked) {
      assert.fail(
        "migrations/schema.sql is not the schema that the migrations make " +
          "(- in the file, + in a migrated database). Run `deno task schema` " +
          "and review the change to migrations/schema.sql with the " +
          `migration that made it.\n${lineDiff(checked, migrated)}`,
      );
    }
  });
});

Deno.test("the dump does not depend on the session's search_path", async () => {
  await withTestDatabase(async ({ url, sql }) => {
    const first = await dumpSchema(sql);
    const other = connect(url, { max: 1 });
    try {
      await other`set search_path = queue, platform, public`;
      assert.equal(await dumpSchema(other), first);
    } finally {
      await other.end();
    }
  });
});

Deno.test("lineDiff marks removed and added lines, with context", () => {
  const before = ["a", "b", "c", "d", "e", "f", "g", "h"].join("\n");
  const after = ["a", "b", "c", "D", "e", "f", "g", "h", "i"].join("\n");
  assert.equal(
    lineDiff(before, after, { context: 1 }),
    [
      "@@ line 3 (-), 3 (+)",
      "  c",
      "- d",
      "+ D",
      "  e",
      "@@ line 8 (-), 8 (+)",
      "  h",
      "+ i",
    ].join("\n"),
  );
  assert.equal(lineDiff(before, before), "");
});
