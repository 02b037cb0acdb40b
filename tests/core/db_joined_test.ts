/**
 * lib/db/joined.ts: calls made while a statement is out go together in the
 * next one; each caller gets its own results or the statement's error; a
 * key is never twice in one statement. Run against PostgreSQL: the
 * statement is an upsert that may not touch one row twice.
 */
import assert from "node:assert/strict";
import { joined } from "../../lib/db/joined.ts";
import { withTestDatabase } from "./_db.ts";

interface Row {
  key: string;
  hits: number;
}

Deno.test("joined: waiting calls share the next statement, each gets its own rows, and a key is never twice in one", async () => {
  await withTestDatabase(async ({ sql }) => {
    await sql`create table joined_t (key text primary key, hits int not null)`;
    const statements: string[][] = [];
    const upsert = joined<string, Row>({
      run: async (keys) => {
        statements.push(keys);
        return await sql<Row[]>`
          insert into joined_t (key, hits)
          select k, 1 from unnest(${keys}::text[]) as k
          on conflict (key) do update set hits = joined_t.hits + 1
          returning key, hits`;
      },
      itemKey: (k) => k,
      resultKey: (r) => r.key,
    });

    // The first goes at once; the three made while it is out wait. Of
    // those, the one with a key already waiting ("c") goes after.
    const [a, b, c, again] = await Promise.all([
      upsert(["a"]),
      upsert(["b", "c"]),
      upsert(["d"]),
      upsert(["c", "e"]),
    ]);
    assert.deepEqual(statements, [["a"], ["b", "c", "d"], ["c", "e"]]);
    assert.deepEqual(a.map((r) => r.key), ["a"]);
    assert.deepEqual(b.map((r) => r.key).sort(), ["b", "c"]);
    assert.deepEqual(c.map((r) => r.key), ["d"]);
    assert.deepEqual(
      again.map((r) => [r.key, r.hits]).sort(),
      [["c", 2], ["e", 1]],
    );
    // A lone call later goes at once, on its own.
    assert.deepEqual((await upsert(["f"])).map((r) => r.key), ["f"]);
    assert.deepEqual(statements.at(-1), ["f"]);
    assert.deepEqual(await upsert([]), []);
  });
});

Deno.test("joined: a failed statement fails each of its callers, and the next statement goes on", async () => {
  await withTestDatabase(async ({ sql }) => {
    await sql`create table joined_n (n int primary key check (n > 0))`;
    const insert = joined<number, { n: number }>({
      run: async (ns) =>
        await sql<{ n: number }[]>`
          insert into joined_n (n) select unnest(${ns}::int[]) returning n`,
      itemKey: String,
      resultKey: (r) => String(r.n),
    });
    const first = insert([1]);
    const failing = [insert([2]), insert([-3])];
    const after = insert([2]).catch((e) => e);
    assert.deepEqual(await first, [{ n: 1 }]);
    for (const call of failing) {
      await assert.rejects(call, /check constraint/);
    }
    // "2" was waiting already: it went in the statement after, alone.
    assert.deepEqual(await after, [{ n: 2 }]);
    const [{ count }] = await sql<{ count: number }[]>`
      select count(*)::int as count from joined_n`;
    assert.equal(count, 2);
  });
});
