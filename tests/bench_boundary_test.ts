/**
 * The benchmark stays out of the product: neither program (the app, the
 * worker) loads a module of bench/ nor the benchmark's peers,
 * graphile-worker and pg-boss, dependencies of the benchmark alone. Read from
 * the module graphs Deno resolves (`deno info --json`); the benchmark's own
 * graph is read too, so that the check is seen to find the peers where they
 * are.
 */
import assert from "node:assert/strict";

const ROOT = new URL("..", import.meta.url).pathname;
const PEERS = ["graphile-worker@", "pg-boss@"];
const isPeer = (p: string) => PEERS.some((peer) => p.startsWith(peer));

interface Graph {
  files: string[];
  npm: string[];
}

async function graph(entry: string): Promise<Graph> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  assert.equal(code, 0, `deno info ${entry}: ${text(stderr)}`);
  const info = JSON.parse(text(stdout)) as {
    modules: { specifier: string; kind?: string; npmPackage?: string }[];
  };
  return {
    files: info.modules
      .filter((m) => m.specifier.startsWith("file:"))
      .map((m) => new URL(m.specifier).pathname.slice(ROOT.length)),
    npm: info.modules.flatMap((m) => m.npmPackage ? [m.npmPackage] : []),
  };
}

for (const entry of ["main.ts", "workers/main.ts"]) {
  Deno.test(`bench boundary: ${entry} loads nothing of bench/ nor the peers`, async () => {
    const g = await graph(entry);
    assert.ok(g.files.includes(entry), `${entry} is not in its own graph`);
    assert.deepEqual(g.files.filter((f) => f.startsWith("bench/")), []);
    assert.deepEqual(g.npm.filter(isPeer), []);
  });
}

Deno.test("bench boundary: the benchmark's graph has the peers (the check sees them)", async () => {
  const g = await graph("bench/main.ts");
  for (const peer of PEERS) {
    assert.ok(g.npm.some((p) => p.startsWith(peer)), `${peer} not found`);
  }
});
