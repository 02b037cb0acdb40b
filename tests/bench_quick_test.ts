/**
 * The benchmark never rots: `bench/main.ts --quick` runs every scenario on
 * the test run's PostgreSQL (BENCH_DATABASE_URL, its own databases, dropped
 * after), the peers (graphile-worker, pg-boss) with a few hundred jobs, and
 * writes JSON in which every scenario but the soak has numeric figures; the
 * JetStream scenarios may be skipped, with their reason, where no JetStream
 * answers. Timing goals are not checked here: they belong to the benchmark.
 */
import assert from "node:assert/strict";
import { adminUrl } from "./_db.ts";
import { natsMissing, TEST_NATS_URL } from "./_nats.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const SCENARIOS = [
  "baseline",
  "peer",
  "peer_pgboss",
  "write",
  "relay",
  "deliver",
  "steady",
  "fairness",
  "wakeup",
  "transports",
  "split",
  "split_jetstream",
  "console",
  "memory",
];

Deno.test("bench --quick runs every scenario and writes numeric figures", async () => {
  const out = await Deno.makeTempFile({
    prefix: "bench-quick-",
    suffix: ".json",
  });
  try {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "bench/main.ts", "--quick", "--out", out],
      cwd: ROOT,
      // The run's own nats-server, never the machine's.
      env: { BENCH_DATABASE_URL: adminUrl(), NATS_URL: TEST_NATS_URL },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    assert.equal(
      code,
      0,
      `bench --quick failed:\n${text(stderr).slice(-4000)}`,
    );
    assert.match(text(stdout), /scenario\s+figure\s+value/);
    const results = JSON.parse(await Deno.readTextFile(out));
    assert.equal(results.mode, "quick");
    assert.equal(typeof results.machine.cores, "number");
    assert.ok(results.machine.postgres.server_version);
    for (const name of SCENARIOS) {
      const s = results.scenarios[name];
      assert.ok(s, `scenario ${name} is missing`);
      const jetstream = name === "transports" || name === "split_jetstream";
      if (jetstream && natsMissing) {
        assert.equal(s.status, "skipped");
        assert.match(s.params.reason, /JetStream/);
        continue;
      }
      assert.equal(s.status, "ok", `${name}: ${s.error}`);
      assert.ok(s.figures.length > 0, `${name} has no figures`);
      for (const f of s.figures) {
        assert.ok(
          typeof f.value === "number" && Number.isFinite(f.value),
          `${name}.${f.name} is not a number: ${f.value}`,
        );
        assert.ok(f.unit, `${name}.${f.name} has no unit`);
        // A quick window on a loaded machine may see no operation of a
        // baseline (0/s): there is no ratio to judge then. A baseline
        // that was never measured (null) still fails.
        const unjudged = f.target?.of === "ratio" && f.baseline?.value === 0;
        if (f.target && !unjudged) {
          assert.equal(
            typeof f.met,
            "boolean",
            `${name}.${f.name}: ${JSON.stringify(f)}`,
          );
        }
      }
    }
    assert.equal(results.scenarios.soak.status, "skipped");
    // The peer's figures are in the same results, and the targets that are
    // ratios to them were judged against them.
    const peers = new Map<string, number>(
      ["peer", "peer_pgboss"].flatMap((p) =>
        results.scenarios[p].figures.map((
          f: { name: string; value: number },
        ) => [`${p}.${f.name}`, f.value] as const)
      ),
    );
    for (
      const [scenario, figure, baseline] of [
        ["write", "orders_8", "peer.order_add_job_8"],
        ["deliver", "applied_per_s", "peer.drain_handler"],
        ["wakeup", "applied_p50", "peer.wakeup_p50"],
        ["write", "orders_8_vs_pgboss", "peer_pgboss.order_send_8"],
        ["deliver", "applied_per_s_vs_pgboss", "peer_pgboss.drain_handler"],
      ]
    ) {
      const f = results.scenarios[scenario].figures.find((
        x: { name: string },
      ) => x.name === figure);
      assert.equal(f.baseline.name, baseline);
      // The figure is rounded to four significant digits, the baseline is
      // not.
      const value = peers.get(baseline)!;
      assert.ok(
        Math.abs(f.baseline.value - value) <= 1e-3 * Math.abs(value),
        `${scenario}.${figure}: ${f.baseline.value} against ${value}`,
      );
      assert.equal(f.target.of, "ratio");
    }
    assert.match(text(stdout), /target\s+figure\s+measured\s+met/);
  } finally {
    await Deno.remove(out).catch(() => {});
  }
});
