/**
 * Settings that cannot break a promise (promises.ts,
 * services/settings_check.ts): each refusal started with its bad setting,
 * by the cheapest real start that shows it. Pure rules through
 * parseConfig, which every start reads first, and one of them through
 * `deno run main.ts` to show the one line and exit 1; the cluster's size
 * through startBakery against a nats-server of the test's own; fsync off
 * through a whole test bakery, whose database runs so on purpose.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../config.ts";
import { startBakery } from "../bakery.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { BrokenPromise, natsClusterSize } from "../services/settings_check.ts";
import { startTestBakery, testConfig } from "./_app.ts";
import { testDatabase } from "./_db.ts";
import { NatsServer, natsServerTest } from "./_nats_server.ts";
import { testStream } from "./_nats.ts";

/** Asserts that `env` is refused, naming `setting` and matching `promise`. */
function assertRefused(
  env: Record<string, string>,
  setting: string,
  promise: RegExp,
) {
  assert.throws(
    () => parseConfig(env),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.ok(e.message.startsWith(`${setting} (`), e.message);
      assert.match(e.message, promise);
      return true;
    },
  );
}

Deno.test("settings: retention shorter than the replay horizon is refused", () => {
  assertRefused(
    { REPLAY_HORIZON_DAYS: "30", RETENTION_DAYS: "29" },
    "RETENTION_DAYS",
    /shorter than REPLAY_HORIZON_DAYS \(30\).*applied twice/,
  );
  // As long as the horizon is enough; it is the margin then.
  const config = parseConfig({
    REPLAY_HORIZON_DAYS: "30",
    RETENTION_DAYS: "30",
  });
  assert.equal(config.RETENTION_MARGIN_DAYS, 0);
  assert.equal(parseConfig({}).RETENTION_MARGIN_DAYS, 7);
  assert.throws(
    () => parseConfig({ RETENTION_DAYS: "40", RETENTION_MARGIN_DAYS: "3" }),
    /set one/,
  );
});

Deno.test("settings: a JetStream stream's max_age shorter than the horizon is refused", () => {
  assertRefused(
    { QUEUE: "jetstream", REPLAY_HORIZON_DAYS: "30", NATS_MAX_AGE_DAYS: "7" },
    "NATS_MAX_AGE_DAYS",
    /shorter than REPLAY_HORIZON_DAYS \(30\).*drop messages that can still be redriven/,
  );
  parseConfig({ QUEUE: "jetstream", NATS_MAX_AGE_DAYS: "30" });
});

Deno.test("settings: a lease shorter than a batch's send timeout is refused", () => {
  assertRefused(
    { DELIVERY_TIMEOUT_MS: "5000", CONSUMER_LEASE_MS: "4999" },
    "CONSUMER_LEASE_MS",
    /shorter than DELIVERY_TIMEOUT_MS \(5000\), a batch's send timeout.*twice/,
  );
  parseConfig({ DELIVERY_TIMEOUT_MS: "5000", CONSUMER_LEASE_MS: "5000" });
});

Deno.test("settings: retry delays that outlast the horizon are refused", () => {
  assertRefused(
    { REPLAY_HORIZON_DAYS: "1", RETRY_DELAYS_MS: "43200000,43200001" },
    "RETRY_DELAYS_MS",
    /past REPLAY_HORIZON_DAYS \(1\).*could no longer be redriven/,
  );
  parseConfig({
    REPLAY_HORIZON_DAYS: "1",
    RETRY_DELAYS_MS: "43200000,43200000",
  });
});

Deno.test("settings: the program refuses to start with one line naming the setting, exit 1", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", "main.ts"],
    env: { RETENTION_DAYS: "10", DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 1);
  const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0],
    /^config error: RETENTION_DAYS \(10\) is shorter than REPLAY_HORIZON_DAYS \(30\)/,
  );
});

natsServerTest(
  "settings: NATS_REPLICAS larger than the cluster is refused at start",
  async () => {
    const nats = await NatsServer.start();
    const db = await testDatabase({ max: 4 });
    const { logger } = memoryLogger("info");
    try {
      assert.equal(await natsClusterSize(nats.url), 1);
      const config = testConfig({
        QUEUE: "jetstream",
        NATS_URL: nats.url,
        NATS_STREAM: testStream(),
        NATS_REPLICAS: "3",
      });
      await assert.rejects(
        startBakery({ config, databaseUrl: db.url, log: logger, sql: db.sql }),
        (e: unknown) => {
          assert.ok(e instanceof BrokenPromise, String(e));
          assert.equal(e.setting, "NATS_REPLICAS");
          assert.match(
            e.message,
            /^NATS_REPLICAS \(3\) is larger than the NATS cluster at NATS_URL \(1 server\).*lose messages/,
          );
          return true;
        },
      );
    } finally {
      await db.drop();
      await nats.stop();
    }
  },
);

natsServerTest("settings: a cluster of three counts as three", async () => {
  const servers = await NatsServer.cluster(3);
  try {
    assert.equal(await natsClusterSize(servers[0].url), 3);
  } finally {
    for (const s of servers) await s.stop();
  }
});

Deno.test("settings: fsync off is a warning at start, not a refusal", async () => {
  const t = await startTestBakery();
  try {
    const [{ fsync }] = await t.sql<{ fsync: string }[]>`
      select current_setting('fsync') as fsync`;
    assert.equal(fsync, "off", "the suite's PostgreSQL runs with fsync off");
    const warned = t.lines.filter((l) => l.event === "database_fsync_off");
    assert.equal(warned.length, 1);
    assert.equal(warned[0].level, "warn");
  } finally {
    await t.stop();
  }
});
