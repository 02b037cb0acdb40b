/**
 * `deno task worker`: the relay and the consumers alone, no web server. Run
 * as many as wanted against one database (DATABASE_URL): leases and SKIP
 * LOCKED keep them off each other's rows, and expired leases are taken over.
 * SIGTERM: stop claiming, finish what is in flight, exit.
 *
 * Without DATABASE_URL it refuses: an embedded cluster belongs to the one
 * `deno task start` process that owns the data directory.
 */
import { loadConfig } from "../config.ts";
import { createLogger } from "../lib/log/mod.ts";
import { connect } from "../lib/db/connect.ts";
import { migrate } from "../kit/postgres/migrate.ts";
import { notifyChanged } from "../lib/wake/feed.ts";
import { onShutdown, runUntilSignal } from "../lib/process.ts";
import {
  startBakeryMessaging,
  startSplitMessaging,
  wakeRelaysAfterCommit,
} from "../services/mod.ts";
import {
  checkServiceUrls,
  openServiceDatabases,
} from "../services/databases.ts";
import { scheduleWipes } from "../services/wipe.ts";
import { startBakeryJobs } from "../bakery.ts";
import { checkSettings } from "../services/settings_check.ts";

const config = loadConfig(checkServiceUrls);
const log = createLogger(config.LOG_LEVEL).child({ process: "worker" });

await runUntilSignal(log, async () => {
  if (!config.DATABASE_URL) {
    throw new Error(
      "deno task worker needs DATABASE_URL: the embedded PostgreSQL belongs to deno task start",
    );
  }
  const split = config.SERVICE_DATABASES === "split";
  const databases = split
    ? await openServiceDatabases(config.DATABASE_URL, log, config.DATABASE_URLS)
    : undefined;
  const sql = databases?.main ?? connect(config.DATABASE_URL, {
    applicationName: "bakery-worker",
  });
  onShutdown(() => databases ? databases.close() : sql.end({ timeout: 5 }));
  await checkSettings(config, sql, log);
  if (!databases) await migrate(sql, log);
  const onTouched = (ids: string[]) =>
    notifyChanged(sql, ids).catch((error) =>
      log.warn("notify_failed", { error })
    );
  const messaging = databases
    ? await startSplitMessaging({ sql, log, config }, databases, { onTouched })
    : await startBakeryMessaging({
      sql,
      log,
      config,
      url: config.DATABASE_URL,
    }, { onTouched });
  onShutdown(() => messaging.stop());
  // Orders appends OrderPaid inside a delivery: wake the relay after commit.
  const wakers = wakeRelaysAfterCommit(sql, databases, messaging, log);
  onShutdown(() => wakers.flush());
  const jobs = startBakeryJobs(sql, log, config, messaging.owner!, messaging);
  onShutdown(() => jobs.stop());
  if (config.SANDBOX_WIPE === "on") onShutdown(scheduleWipes(sql, log));
  console.error(`worker ${messaging.owner} is running; SIGTERM stops it`);
});
