/**
 * What the web app and the workers share in one process: the validated
 * settings, the pool, the logger, the session store and the payment
 * gateway. Built once by bakery.ts (for main.ts and for tests).
 */
import type { BrokerCluster } from "./lib/carriers/jetstream/mod.ts";
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
   * With QUEUE=jetstream and the workers in this process: whether the
   * broker answers (for /health).
   */
  brokerUp?: () => boolean;
  /**
   * Set once the process has started all it runs (the server listens
   * first, so that the test checkout can post to it): until then /health
   * answers 503, "starting".
   */
  started?: boolean;
  /** With a broker here: its cluster as this process sees it (/health). */
  brokerCluster?: () => BrokerCluster;
  /**
   * A redrive also hands the message to the transport again (it keeps a
   * copy of its own: JetStream), as the transport says
   * (lib/carriers/carrier.ts `redriveRepublishes`).
   */
  redriveRepublishes: boolean;
  /**
   * With the workers in this process: the bulk job loop, woken when a job
   * is created (services/console/jobs.ts).
   */
  jobs?: { wake(): void };
}
