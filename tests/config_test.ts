import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../config.ts";
import { natsServers } from "../lib/carriers/jetstream/mod.ts";
import { checkServiceUrls } from "../services/databases.ts";

Deno.test("config: defaults when nothing is set", () => {
  const config = parseConfig({});
  assert.equal(config.PORT, 8000);
  assert.equal(config.DATA_DIR, ".data");
  assert.deepEqual(config.RETRY_DELAYS_MS, [1000, 5000, 25000]);
  assert.equal(config.DATABASE_URL, undefined);
});

Deno.test("config: a bad value names the variable and what it expected", () => {
  assert.throws(
    () => parseConfig({ PORT: "eighty" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message === 'PORT must be an integer from 0 to 65535 (got "eighty")',
  );
  assert.throws(
    () => parseConfig({ LOG_LEVEL: "loud" }),
    /LOG_LEVEL must be one of debug, info, warn, error/,
  );
  assert.throws(
    () => parseConfig({ RETRY_DELAYS_MS: "1000,,5" }),
    /RETRY_DELAYS_MS must be a comma-separated list/,
  );
});

Deno.test("config: NATS_URL takes one server or several; NATS_REPLICAS 1 to 5", () => {
  assert.equal(parseConfig({}).NATS_REPLICAS, 1);
  const urls =
    "nats://10.0.0.1:4222, nats://10.0.0.2:4222,nats://10.0.0.3:4222";
  const config = parseConfig({ NATS_URL: urls, NATS_REPLICAS: "3" });
  assert.deepEqual(natsServers(config.NATS_URL), [
    "nats://10.0.0.1:4222",
    "nats://10.0.0.2:4222",
    "nats://10.0.0.3:4222",
  ]);
  assert.equal(config.NATS_REPLICAS, 3);
  for (const bad of ["nats://a:1,", "nats://a:1,,nats://b:2", "http://a:1"]) {
    assert.throws(() => parseConfig({ NATS_URL: bad }), /NATS_URL must be/);
  }
  assert.throws(
    () => parseConfig({ NATS_REPLICAS: "6" }),
    /NATS_REPLICAS must be an integer from 1 to 5/,
  );
});

Deno.test("config: a bad setting stops the program with one line, exit 1", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    // Quiet: on a cold cache Deno's own "Download ..." lines would come
    // before the one line this test reads.
    args: ["run", "--quiet", "-A", "main.ts"],
    env: { PORT: "not-a-port", DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 1);
  const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
  assert.deepEqual(lines, [
    'config error: PORT must be an integer from 0 to 65535 (got "not-a-port")',
  ]);
});

Deno.test("config: RATE_LIMIT_PER_MINUTE is 600 by default, 0 turns limits off", () => {
  assert.equal(parseConfig({}).RATE_LIMIT_PER_MINUTE, 600);
  assert.equal(
    parseConfig({ RATE_LIMIT_PER_MINUTE: "0" }).RATE_LIMIT_PER_MINUTE,
    0,
  );
  assert.equal(
    parseConfig({ RATE_LIMIT_PER_MINUTE: "5" }).RATE_LIMIT_PER_MINUTE,
    5,
  );
  assert.throws(
    () => parseConfig({ RATE_LIMIT_PER_MINUTE: "-1" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        'RATE_LIMIT_PER_MINUTE must be an integer from 0 to 1000000 (got "-1")',
  );
  assert.throws(
    () => parseConfig({ RATE_LIMIT_PER_MINUTE: "many" }),
    /RATE_LIMIT_PER_MINUTE must be an integer/,
  );
});

Deno.test("config: METRICS_TOKEN is unset by default and must be a long bearer token", () => {
  assert.equal(parseConfig({}).METRICS_TOKEN, undefined);
  const token = "s3cret-token_for.metrics~1";
  assert.equal(parseConfig({ METRICS_TOKEN: token }).METRICS_TOKEN, token);
  assert.throws(
    () => parseConfig({ METRICS_TOKEN: "short" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        'METRICS_TOKEN must be a token of at least 16 letters, digits or ._~+/- (got "short")',
  );
  assert.throws(
    () => parseConfig({ METRICS_TOKEN: "a token with spaces in it" }),
    /METRICS_TOKEN must be a token/,
  );
});

Deno.test("config: the alert thresholds have their defaults and refuse what is not one", () => {
  const defaults = parseConfig({});
  assert.equal(defaults.ALERT_OUTBOX_AGE_S, 60);
  assert.equal(defaults.ALERT_DEAD_LETTERS, 1);
  assert.equal(defaults.ALERT_SUCCESS_RATE, 0.9);
  assert.equal(defaults.ALERT_SUCCESS_MIN_ATTEMPTS, 10);
  const set = parseConfig({
    ALERT_OUTBOX_AGE_S: "300",
    ALERT_DEAD_LETTERS: "5",
    ALERT_SUCCESS_RATE: "0.75",
    ALERT_SUCCESS_MIN_ATTEMPTS: "3",
  });
  assert.equal(set.ALERT_OUTBOX_AGE_S, 300);
  assert.equal(set.ALERT_DEAD_LETTERS, 5);
  assert.equal(set.ALERT_SUCCESS_RATE, 0.75);
  assert.equal(set.ALERT_SUCCESS_MIN_ATTEMPTS, 3);
  assert.throws(
    () => parseConfig({ ALERT_SUCCESS_MIN_ATTEMPTS: "0" }),
    /ALERT_SUCCESS_MIN_ATTEMPTS must be an integer from 1 to 1000000/,
  );
  assert.throws(
    () => parseConfig({ ALERT_SUCCESS_RATE: "1.5" }),
    (e: Error) =>
      e.message ===
        'ALERT_SUCCESS_RATE must be a number from 0 to 1, such as 0.9 (got "1.5")',
  );
  assert.throws(
    () => parseConfig({ ALERT_DEAD_LETTERS: "0" }),
    /ALERT_DEAD_LETTERS must be an integer from 1 to 1000000/,
  );
  assert.throws(
    () => parseConfig({ ALERT_OUTBOX_AGE_S: "a minute" }),
    /ALERT_OUTBOX_AGE_S must be an integer/,
  );
});

Deno.test("config: SERVICE_DATABASES and DATABASE_URL_<SERVICE>", () => {
  assert.equal(parseConfig({}).SERVICE_DATABASES, "shared");
  assert.deepEqual(parseConfig({}).DATABASE_URLS, {});
  const kitchen = "postgres://app@kitchen.internal:5432/cards";
  const split = parseConfig({
    SERVICE_DATABASES: "split",
    DATABASE_URL_KITCHEN: kitchen,
    DATABASE_URL_ORDERS: "",
  });
  assert.deepEqual(split.DATABASE_URLS, { kitchen });
  assert.throws(
    () =>
      checkServiceUrls(
        parseConfig({
          SERVICE_DATABASES: "split",
          DATABASE_URL_KICHEN: kitchen,
        }),
      ),
    (e: Error) =>
      e instanceof ConfigError &&
      e.message.startsWith("DATABASE_URL_KICHEN names no service") &&
      e.message.includes("KITCHEN"),
  );
  assert.throws(
    () =>
      parseConfig({
        SERVICE_DATABASES: "split",
        DATABASE_URL_KITCHEN: "mysql://x/y",
      }),
    (e: Error) =>
      e instanceof ConfigError &&
      e.message.startsWith("DATABASE_URL_KITCHEN must be") &&
      e.message.includes('"mysql://x/y"'),
  );
  assert.throws(
    () => parseConfig({ DATABASE_URL_KITCHEN: kitchen }),
    /DATABASE_URL_KITCHEN is read only with SERVICE_DATABASES=split/,
  );
  assert.throws(
    () =>
      parseConfig({ SERVICE_DATABASES: "split", NATS_STREAM: "S".repeat(57) }),
    /NATS_STREAM must be at most 56 characters/,
  );
});
