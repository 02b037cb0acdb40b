/**
 * What the web app and the workers share in one process: the validated
 * settings, the pool, the logger, the session store and the payment
 * gateway. Built once by bakery.ts (for main.ts and for tests).
 */
import type { Messaging } from "./lib/mod.ts";
import type { Config } from "./config.ts";
import type { Sql } from "./lib/db/connect.ts";
import type { Logger } from "./lib/log/mod.ts";
import type { SessionStore } from "./kit/http/session.ts";
import type { PaymentGateway } from "./services/billing/gateway.ts";
import type { ChangeFeed } from "./lib/wake/feed.ts";
import type { Registry } from "./lib/metrics/mod.ts";

export interface Deps {
  config: Config;
  sql: Sql;
  log: Logger;
  sessions: SessionStore;
  gateway: PaymentGateway;
  webhookSecret: string;
  /** Live updates: which sandboxes changed (for server-sent events). */
  feed: ChangeFeed;
  /** What /metrics renders. */
  metrics: Registry;
  /** Aborted when the server stops: ends the open event streams. */
  closing: AbortSignal;
  /**
   * The process's messaging (lib/messaging.ts): the console asks it to
   * redrive, refuse and supersede, and /health asks it about the broker.
   * Started only where the workers run in this process.
   */
  messaging: Messaging;
  /**
   * Set once the process has started all it runs (the server listens
   * first, so that the test checkout can post to it): until then /health
   * answers 503, "starting".
   */
  started?: boolean;
  /**
   * With the workers in this process: the bulk job loop, woken when a job
   * is created (services/console/jobs.ts).
   */
  jobs?: { wake(): void };
}
