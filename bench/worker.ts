/**
 * A worker process for the benchmark: the bakery's relay or consumers alone,
 * assembled as `deno task worker` (workers/main.ts) assembles them, with
 * services/mod.ts `startBakeryMessaging`, started on `go` so that the
 * parent times the work and not the start-up.
 *
 * Usage: deno run -A bench/worker.ts relay|consume
 * Environment: BENCH_WORKER_DATABASE_URL.
 */
import { parseConfig } from "../config.ts";
import { connect } from "../lib/db/connect.ts";
import { createLogger } from "../lib/log/mod.ts";
import { startBakeryMessaging } from "../services/mod.ts";
import { coalescingWaker, setOutboxWaker } from "../lib/outbox/mod.ts";
import { notifyChanged } from "../lib/wake/feed.ts";
import { say, stdinLines } from "./child.ts";

const role = Deno.args[0];
if (role !== "relay" && role !== "consume") {
  console.error("usage: bench/worker.ts relay|consume");
  Deno.exit(2);
}
const url = Deno.env.get("BENCH_WORKER_DATABASE_URL");
if (!url) {
  console.error("BENCH_WORKER_DATABASE_URL is not set");
  Deno.exit(2);
}
// Log lines go to stderr: stdout carries the protocol.
const log = createLogger("warn", (line) => console.error(line));
const config = parseConfig({ LOG_LEVEL: "warn" });
const sql = connect(url, { applicationName: `bench-${role}` });
const next = stdinLines();

// Open the pool's connections now, so that the timed part does not pay for
// them (10 is the pool size of connect()).
await Promise.all(Array.from({ length: 10 }, () => sql`select 1`));
say("ready", { pid: Deno.pid });
if (await next() !== "go") {
  await sql.end({ timeout: 5 });
  Deno.exit(0);
}
// As workers/main.ts: live-view hints per batch, and the after-commit waker
// for what the receivers append (orders writes OrderPaid in a delivery).
const messaging = await startBakeryMessaging(
  { sql, log, config, url },
  {
    roles: { relay: role === "relay", consume: role === "consume" },
    onTouched: (ids) =>
      notifyChanged(sql, ids).catch((error) =>
        log.warn("notify_failed", { error })
      ),
  },
);
const waker = coalescingWaker(sql, {
  local: messaging,
  onError: (error) => log.warn("outbox_wake_failed", { error }),
});
setOutboxWaker(sql, waker.wake);
say("started");
// "mem": what V8 and the rest hold now; "stop" (or the end of stdin) ends.
for (let line = await next(); line !== "stop"; line = await next()) {
  if (line === "mem") say("mem", { ...Deno.memoryUsage() });
}
await messaging.stop();
await waker.flush();
await sql.end({ timeout: 5 });
say("stopped");
