/**
 * The whole bakery in one process, as `deno task start` runs it after the
 * database is open (bakery.ts `startBakery`: web app, test-mode payments,
 * relay and consumers), for the memory figure under steady load.
 *
 * Environment: BENCH_WORKER_DATABASE_URL, BENCH_APP_DATA_DIR. Prints
 * `BENCH ready {"url": ...}`.
 */
import { parseConfig } from "../config.ts";
import { createLogger } from "../lib/log/mod.ts";
import { startBakery } from "../bakery.ts";
import { say, stdinLines } from "./child.ts";

const url = Deno.env.get("BENCH_WORKER_DATABASE_URL");
if (!url) {
  console.error("BENCH_WORKER_DATABASE_URL is not set");
  Deno.exit(2);
}
// The parent makes and removes the data directory, even if this process is
// killed.
const dataDir = Deno.env.get("BENCH_APP_DATA_DIR") ?? ".data-bench";
const config = parseConfig({
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  DATA_DIR: dataDir,
  // A fixed secret: nothing is written to the data directory.
  STRIPE_WEBHOOK_SECRET: "whsec_benchmark_only_secret",
  DATABASE_URL: url,
  // Load from one address, far above what a person clicks: no rate limits.
  RATE_LIMIT_PER_MINUTE: "0",
});
const log = createLogger("warn", (line) => console.error(line));
const next = stdinLines();
const bakery = await startBakery({ config, databaseUrl: url, log });
say("ready", { url: bakery.url, pid: Deno.pid });
while (await next() !== "stop") {
  // only "stop" (or the end of stdin) ends the app
}
await bakery.stop();
say("stopped");
