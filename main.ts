/**
 * `deno task start`: one process runs the whole bakery. It opens the database
 * (embedded, or DATABASE_URL), migrates it, builds the islands bundle, serves
 * the web app and runs the workers; SIGINT or SIGTERM stops them in the
 * reverse order, PostgreSQL last.
 */
import { loadConfig } from "./config.ts";
import { createLogger } from "./lib/log/mod.ts";
import { openDatabase } from "./kit/postgres/open.ts";
import { connect } from "./lib/db/connect.ts";
import { migrate } from "./kit/postgres/migrate.ts";
import { buildIslands } from "./kit/http/islands.ts";
import { onShutdown, runUntilSignal } from "./lib/process.ts";
import { startBakery } from "./bakery.ts";
import {
  checkServiceUrls,
  openServiceDatabases,
} from "./services/databases.ts";

const config = loadConfig(checkServiceUrls);
const log = createLogger(config.LOG_LEVEL);

await runUntilSignal(log, async () => {
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    log,
  });
  // PostgreSQL's stop is bounded on its own and always runs to its end.
  if (db.cluster) {
    onShutdown(() => db.cluster!.stop(), { name: "postgres", bounded: true });
  }
  // SERVICE_DATABASES=split: a database per service, named after this one
  // (services/databases.ts), each migrated as it opens.
  const databases = config.SERVICE_DATABASES === "split"
    ? await openServiceDatabases(db.url, log, config.DATABASE_URLS)
    : undefined;
  const sql = databases?.main ?? connect(db.url, { applicationName: "bakery" });
  onShutdown(() => databases ? databases.close() : sql.end({ timeout: 5 }), {
    name: "pool",
  });
  if (!databases) await migrate(sql, log);
  const islands = await buildIslands();
  log.info("islands_built", { bytes: islands.bytes, ms: islands.millis });
  const bakery = await startBakery({
    config,
    databaseUrl: databases?.urls.get("console") ?? db.url,
    log,
    sql,
    databases,
  });
  onShutdown(() => bakery.stop(), { name: "bakery" });
  console.error(`\n  Outbox Bakery is open at ${bakery.url}\n`);
});
