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
