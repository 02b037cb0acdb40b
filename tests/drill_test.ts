/**
 * `deno task drill` as a user runs it, twice: a short drill with a process
 * killed, PostgreSQL killed and acknowledgements lost must pass, and a
 * drill whose receivers skip their inbox check while deliveries are sent
 * twice must fail with doubled effects. Each drill starts its own
 * PostgreSQL and bakery; the test reads the report it writes.
 */
import assert from "node:assert/strict";
import { ROOT } from "./_main.ts";

interface Report {
  passed: boolean;
  load: { placed: number; accepted: number };
  faults: { kind: string; error?: string }[];
  verdict: {
    lost: number;
    doubled: number;
    outOfOrder: number;
    stuck: number;
    detail: { doubledBy: Record<string, number> };
    latencyMs: { p50: number | null };
  };
}

/** Runs the drill with `args`; its exit code, report and output. */
async function drill(args: string[]) {
  const out = await Deno.makeTempDir({ prefix: "bakery-drill-test-" });
  try {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "drill/main.ts", ...args, "--out", out],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout) +
      new TextDecoder().decode(stderr);
    const report: Report = JSON.parse(
      await Deno.readTextFile(`${out}/drill.json`).catch(() => "null"),
    );
    const html = await Deno.readTextFile(`${out}/drill.html`).catch(() => "");
    return { code, report, html, text };
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}

Deno.test("drill: a short drill with the app and PostgreSQL killed and acks lost passes", async () => {
  const { code, report, html, text } = await drill([
    "--duration",
    "24",
    "--seed",
    "2",
    "--faults",
    "app_kill,postgres_kill,lost_acks",
  ]);
  assert.ok(report, `no drill.json; the drill said:\n${text}`);
  assert.equal(code, 0, text);
  assert.equal(report.passed, true);
  assert.deepEqual(report.faults.map((f) => f.kind).sort(), [
    "app_kill",
    "lost_acks",
    "postgres_kill",
  ]);
  assert.ok(report.faults.every((f) => !f.error), text);
  assert.ok(report.load.accepted >= 20, `accepted ${report.load.accepted}`);
  const { lost, doubled, outOfOrder, stuck } = report.verdict;
  assert.deepEqual({ lost, doubled, outOfOrder, stuck }, {
    lost: 0,
    doubled: 0,
    outOfOrder: 0,
    stuck: 0,
  });
  assert.ok(report.verdict.latencyMs.p50 !== null);
  assert.match(text, /PASSED/);
  // The report draws the timeline and names each fault on it.
  assert.match(html, /<svg/);
  assert.match(html, /postgres_kill/);
});

Deno.test("drill: a receiver that skips its inbox, with deliveries sent twice, fails it with doubled effects", async () => {
  const { code, report, text } = await drill([
    "--duration",
    "8",
    "--seed",
    "1",
    "--faults",
    "duplicates",
    "--break-inbox",
    "--settle",
    "30",
  ]);
  assert.ok(report, `no drill.json; the drill said:\n${text}`);
  assert.equal(code, 1, text);
  assert.equal(report.passed, false);
  assert.deepEqual(report.faults.map((f) => f.kind), ["duplicates"]);
  assert.ok(report.verdict.doubled > 0, JSON.stringify(report.verdict));
  // The histories append a row per message: the inbox is all that kept
  // them from doubling.
  // One receiver lost its guard: its effects doubled, and no other's.
  assert.ok(report.verdict.detail.doubledBy.crmInteractions > 0);
  assert.equal(report.verdict.detail.doubledBy.customerHistory ?? 0, 0);
  assert.equal(report.verdict.lost, 0);
  assert.match(text, /FAILED/);
});
