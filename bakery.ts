/**
 * The whole bakery on one database: the web app, the payment gateway, and
 * (unless WORKERS=off) the relay and consumers in the same process. main.ts
 * runs it for people; tests run it on their own database.
 */
import type { Config } from "./config.ts";
import type { Deps } from "./deps.ts";
import { connect, type Sql } from "./lib/db/connect.ts";
import type { Logger } from "./lib/log/mod.ts";
import { SessionStore } from "./kit/http/session.ts";
import { createApp } from "./app.tsx";
import {
  type PaymentGateway,
  stripeApiAt,
  StripeGateway,
  TestModeGateway,
} from "./services/billing/gateway.ts";
import { webhookSecret } from "./services/billing/webhook.ts";
import {
  createBakeryMessaging,
  createSplitMessaging,
  wakeRelaysAfterCommit,
} from "./services/mod.ts";
import type { Messaging } from "./lib/mod.ts";
import type { ServiceDatabases } from "./services/databases.ts";
import { ChangeFeed, notifyChanged } from "./lib/wake/feed.ts";
import { bakeryMetrics } from "./services/metrics.ts";
import { scheduleWipes } from "./services/wipe.ts";
import { scheduleRetention } from "./services/retention.ts";
import { startJobLoops } from "./services/console/jobs.ts";
import { checkSettings } from "./services/settings_check.ts";

export interface Bakery {
  /** The app's public URL: PUBLIC_URL, or where it listens. */
  url: string;
  /** Where the server listens, e.g. http://127.0.0.1:8000/ (behind a proxy, not `url`). */
  localUrl: string;
  deps: Deps;
  /** Started only where this process runs the workers (WORKERS=on). */
  messaging: Messaging;
  /** Stops the server, the workers, pending webhook sends and the pool. */
  stop(): Promise<void>;
}

export async function startBakery(options: {
  config: Config;
  databaseUrl: string;
  log: Logger;
  sql?: Sql;
  /**
   * Split mode: a database per service. `databaseUrl` and `sql` are then
   * the console's (`databases.main`).
   */
  databases?: ServiceDatabases;
}): Promise<Bakery> {
  const { config, log, databases } = options;
  if ((config.SERVICE_DATABASES === "split") !== (databases !== undefined)) {
    throw new Error(
      "startBakery takes its databases exactly when SERVICE_DATABASES=split",
    );
  }
  const sql = options.sql ?? databases?.main ??
    connect(options.databaseUrl, { applicationName: "bakery" });
  try {
    await checkSettings(config, sql, log);
  } catch (error) {
    if (!options.sql && !databases) await sql.end({ timeout: 5 });
    throw error;
  }
  const secret = await webhookSecret(
    config.STRIPE_WEBHOOK_SECRET,
    config.DATA_DIR,
  );
  let selfUrl = "";
  const gateway: PaymentGateway = config.STRIPE_SECRET_KEY
    ? new StripeGateway(
      config.STRIPE_SECRET_KEY,
      sql,
      stripeApiAt(config.STRIPE_API_URL),
    )
    : new TestModeGateway({
      sql,
      log,
      webhookSecret: secret,
      webhookUrl: () => new URL("/webhooks/stripe", selfUrl).toString(),
      pollMs: config.POLL_INTERVAL_MS,
      retryDelaysMs: config.CHECKOUT_RETRY_DELAYS_MS,
    });
  const feed = new ChangeFeed({ url: options.databaseUrl, log });
  await feed.start();
  const metrics = bakeryMetrics(sql);
  // Built whether or not the workers run here: the console asks it to
  // redrive either way. Started once the server listens (below).
  const extra = {
    // One NOTIFY per batch tells open pages of those sandboxes to look.
    onTouched: (ids: string[]) =>
      notifyChanged(sql, ids).catch((error) =>
        log.warn("notify_failed", { error })
      ),
    observeLag: metrics.observeLag,
    observeDelivered: metrics.observeDelivered,
  };
  const messaging = databases
    ? createSplitMessaging({ sql, log, config }, databases, extra)
    : createBakeryMessaging(
      { sql, log, config, url: options.databaseUrl },
      extra,
    );
  const closing = new AbortController();
  const deps: Deps = {
    config,
    sql,
    log,
    sessions: new SessionStore(sql),
    gateway,
    webhookSecret: secret,
    feed,
    metrics: metrics.registry,
    closing: closing.signal,
    messaging,
    started: false,
  };
  const app = createApp(deps);
  const ready = Promise.withResolvers<void>();
  const server = Deno.serve({
    port: config.PORT,
    hostname: config.HOST,
    onListen: ({ hostname, port }) => {
      selfUrl = `http://${
        hostname === "0.0.0.0" ? "localhost" : hostname
      }:${port}/`;
      ready.resolve();
    },
  }, app.fetch);
  await ready.promise;
  // The test checkout's events go out once the webhook they post to listens.
  gateway.start();
  const workers = config.WORKERS === "on";
  if (workers) await messaging.start();
  const jobs = workers
    ? startBakeryJobs(sql, log, config, messaging.owner!, messaging)
    : undefined;
  deps.jobs = jobs;
  // Commits wake the relay after commit, not with a NOTIFY inside every
  // order transaction (lib/outbox/wake.ts says why).
  const wakers = wakeRelaysAfterCommit(
    sql,
    databases,
    workers ? messaging : undefined,
    log,
  );
  const stopWipes = config.WORKERS === "on" && config.SANDBOX_WIPE === "on"
    ? scheduleWipes(sql, log, { transport: messaging })
    : () => Promise.resolve();
  const stopRetention = config.WORKERS === "on" && config.RETENTION === "on"
    ? scheduleRetention(sql, log, config)
    : () => Promise.resolve();
  deps.started = true;
  log.info("listening", {
    url: selfUrl,
    workers: config.WORKERS,
    payments: gateway.mode,
  });
  return {
    url: config.PUBLIC_URL ?? selfUrl,
    localUrl: selfUrl,
    deps,
    messaging,
    stop: async () => {
      // Event streams never end by themselves; the server waits for them.
      closing.abort();
      await stopWipes();
      await stopRetention();
      // Before the server: a post under way needs the webhook to answer.
      // What is not sent stays in billing.checkout_events for the next start.
      await gateway.stop();
      await server.shutdown();
      await jobs?.stop();
      await messaging.stop();
      await wakers.flush();
      await feed.stop();
      if (!options.sql && !databases) await sql.end({ timeout: 5 });
    },
  };
}

/**
 * The bulk job loops of a process that runs the workers (services/console/
 * jobs.ts), one per queue: they tell open pages of the sandboxes they
 * changed.
 */
export function startBakeryJobs(
  sql: Sql,
  log: Logger,
  config: Config,
  owner: string,
  messaging: Pick<Messaging, "deadLetters">,
) {
  return startJobLoops({
    sql,
    log,
    owner,
    deadLetters: messaging.deadLetters,
    pollMs: config.POLL_INTERVAL_MS,
    horizonDays: config.REPLAY_HORIZON_DAYS,
    onTouched: (ids) =>
      notifyChanged(sql, ids).catch((error) =>
        log.warn("notify_failed", { error })
      ),
  });
}
