/**
 * lib/ is the messaging core alone, liftable into another project: it
 * imports nothing outside itself but npm packages and Node's modules, and
 * it does not name the bakery or its services.
 */
import assert from "node:assert/strict";

const LIB = new URL("../../lib/", import.meta.url);

/** lib/'s files whose names end in `ending`: its code, or its migrations. */
async function* sources(dir: URL, ending = /\.tsx?$/): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* sources(url, ending);
    else if (ending.test(entry.name)) yield url;
  }
}

const SPECIFIER =
  /(?:from|import)\s*\(?\s*["']([^"']+)["']|new URL\(\s*["'](\.[^"']*)["']/g;
const BAKERY_WORDS = /\b(bakery|bakeries|baker|kitchen|croissants?)\b/i;

Deno.test("lib/ imports only lib/, npm packages and node: modules", async () => {
  const outside: string[] = [];
  for await (const file of sources(LIB)) {
    const text = await Deno.readTextFile(file);
    for (const [, imported, url] of text.matchAll(SPECIFIER)) {
      const specifier = imported ?? url;
      if (!specifier.startsWith(".")) {
        if (/^(node:|npm:|[@a-z])/.test(specifier)) continue;
        outside.push(`${file.pathname}: ${specifier}`);
        continue;
      }
      const target = new URL(specifier, file);
      if (!target.href.startsWith(LIB.href)) {
        outside.push(
          `${file.pathname.slice(LIB.pathname.length)}: ${specifier}`,
        );
      }
    }
  }
  assert.deepEqual(outside, []);
});

Deno.test("lib/ does not name the bakery or its services, in code or SQL", async () => {
  const named: string[] = [];
  for await (const file of sources(LIB, /\.(tsx?|sql)$/)) {
    const lines = (await Deno.readTextFile(file)).split("\n");
    lines.forEach((line, i) => {
      const word = line.match(BAKERY_WORDS)?.[0];
      if (word) {
        named.push(
          `${file.pathname.slice(LIB.pathname.length)}:${i + 1}: ${word}`,
        );
      }
    });
  }
  assert.deepEqual(named, []);
});

// The core says tenant. The app's word for it stays only where it is
// history: the migrations written before the rename, and the field of
// envelopes stored as version 1, which every reader still takes.
const HISTORY_SQL =
  /^(db|outbox|queue)\/migrations\/0001_|^inbox\/migrations\/000[12]_/;

Deno.test("lib/ says tenant, and sandbox only where it is history", async () => {
  const named: string[] = [];
  for await (const file of sources(LIB, /\.(tsx?|sql)$/)) {
    const path = file.pathname.slice(LIB.pathname.length);
    if (HISTORY_SQL.test(path)) continue;
    const lines = (await Deno.readTextFile(file)).split("\n");
    lines.forEach((line, i) => {
      // The version 1 field, and the later migrations renaming what the
      // first ones made.
      const rest = line.replaceAll("sandboxId", "")
        .replace(
          /\b(\w*sandbox_id\w*|sandbox_isolation|\w*_by_sandbox|\w*sandboxes\w*|(current|enable|enter|wiping)_sandbox\w*|sandbox_closed)\b/g,
          (m) => path.endsWith(".sql") ? "" : m,
        );
      if (/sandbox/i.test(rest)) named.push(`${path}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(named, []);
});

/** Every relative import of lib/'s files: [importer, imported], both lib-relative. */
async function libImports(): Promise<[string, string][]> {
  const edges: [string, string][] = [];
  for await (const file of sources(LIB)) {
    const text = await Deno.readTextFile(file);
    for (const [, imported] of text.matchAll(SPECIFIER)) {
      if (!imported?.startsWith(".")) continue;
      const target = new URL(imported, file);
      edges.push([
        file.pathname.slice(LIB.pathname.length),
        target.pathname.slice(LIB.pathname.length),
      ]);
    }
  }
  return edges;
}

// Imports run one way: carriers -> ledger -> db, delivery -> ledger, and
// the relay speaks to the carrier interface alone. A loop between two
// rooms is a seam in the wrong place.
const FORBIDDEN: [RegExp, RegExp, string][] = [
  [/^ledger\//, /^(carriers|delivery|relay|workers)\//, "the ledger"],
  [/^delivery\//, /^(carriers|relay|workers)\//, "delivery"],
  [/^carriers\//, /^(relay|workers)\//, "a carrier"],
  [
    /^relay\//,
    /^(carriers\/(?!carrier\.ts$)|delivery\/|ledger\/)/,
    "the relay",
  ],
];

Deno.test("lib/'s rooms import one way: carriers -> ledger -> db; the relay -> the carrier interface", async () => {
  const wrong = (await libImports()).filter(([from, to]) =>
    FORBIDDEN.some(([a, b]) => a.test(from) && b.test(to))
  ).map(([from, to]) => `${from} imports ${to}`);
  assert.deepEqual(wrong, []);
});

Deno.test("only lib/ledger names the queue's tables", async () => {
  const outside: string[] = [];
  for await (const file of sources(LIB)) {
    const path = file.pathname.slice(LIB.pathname.length);
    if (path.startsWith("ledger/") || path === "db/names.ts") continue;
    const lines = (await Deno.readTextFile(file)).split("\n");
    lines.forEach((line, i) => {
      // The schema's tables by their setting (db/names.ts), or by name in
      // a statement that writes.
      if (
        /\binQueue\(/.test(line) ||
        /\b(insert\s+into|update|delete\s+from)\s+queue\./i.test(line)
      ) outside.push(`${path}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(outside, []);
});

// The app's side of the same rule: server components never import islands
// (routes place the islands), and services import nothing of the browser's.
const APP = new URL("../../", import.meta.url);

/**
 * The app's code: every .ts and .tsx file but lib/'s (the test above holds
 * lib/ to the same rule), the tests' and the bench's, which make the
 * states they measure.
 */
async function* appSources(): AsyncGenerator<URL> {
  const skipped = new Set(["lib", "tests", "bench", "node_modules", "static"]);
  for await (const entry of Deno.readDir(APP)) {
    if (entry.name.startsWith(".") || skipped.has(entry.name)) continue;
    if (entry.isDirectory) yield* sources(new URL(`${entry.name}/`, APP));
    else if (/\.tsx?$/.test(entry.name)) yield new URL(entry.name, APP);
  }
}

/** A statement that writes a table of the queue's schema, over lines too. */
const WRITES_QUEUE = /\b(insert\s+into|update|delete\s+from)\s+queue\./gi;

Deno.test("the app writes no table of the queue: lib/ledger does", async () => {
  const writes: string[] = [];
  let files = 0;
  for await (const file of appSources()) {
    files++;
    const text = await Deno.readTextFile(file);
    for (const match of text.matchAll(WRITES_QUEUE)) {
      const line = text.slice(0, match.index).split("\n").length;
      writes.push(
        `${file.pathname.slice(APP.pathname.length)}:${line}: ${
          match[0].replace(/\s+/g, " ")
        }`,
      );
    }
  }
  // services/, routes/, workers/, drill/, main.ts, bakery.ts and more: far
  // more than a handful, or the walk is looking in the wrong place.
  assert.ok(files > 100, `only ${files} files of the app read`);
  assert.deepEqual(writes, []);
});

Deno.test("the app's check finds a write of the queue over two lines", () => {
  const text = "await sql`\n  update\n    queue.deliveries set state = 'dead'`";
  assert.deepEqual(
    [...text.matchAll(WRITES_QUEUE)].map((m) => m[0].replace(/\s+/g, " ")),
    ["update queue."],
  );
  assert.deepEqual(
    [..."select * from queue.deliveries; update console.bulk_jobs"
      .matchAll(WRITES_QUEUE)],
    [],
  );
});

Deno.test("components/ and services/ import nothing from islands/", async () => {
  const wrong: string[] = [];
  for (const folder of ["components/", "services/"]) {
    for await (const file of sources(new URL(folder, APP))) {
      const text = await Deno.readTextFile(file);
      for (const [, imported] of text.matchAll(SPECIFIER)) {
        if (!imported?.startsWith(".")) continue;
        const target = new URL(imported, file).pathname;
        if (target.startsWith(new URL("islands/", APP).pathname)) {
          wrong.push(
            `${file.pathname.slice(APP.pathname.length)}: ${imported}`,
          );
        }
      }
    }
  }
  assert.deepEqual(wrong, []);
});
