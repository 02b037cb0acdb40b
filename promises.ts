/**
 * Settings that would break a promise the bakery makes, refused when the
 * configuration is read (config.ts), before anything starts. Each refusal
 * names the setting, its value and the promise. The promises:
 *
 * - a dead letter can be redriven for REPLAY_HORIZON_DAYS, and applies
 *   once: its receivers' inbox rows and the ledger's record of it are
 *   kept at least that long (retention), and over JetStream the stream
 *   still holds it (max_age);
 * - a delivery goes to one consumer at a time: a batch's lease outlasts the
 *   time its request may take (DELIVERY_TIMEOUT_MS);
 * - a failing delivery becomes a dead letter while it can still be
 *   redriven: its retries end within the horizon.
 *
 * What needs the database or the broker (the cluster's size, fsync) is
 * checked at start by services/settings_check.ts.
 */
import type { Config } from "./config.ts";
import { consumerLeaseMs } from "./lib/delivery/mod.ts";

const DAY_MS = 86_400_000;

/** A setting that would break a promise; the message says which and why. */
export class BrokenPromise extends Error {
  override name = "BrokenPromise";
  constructor(readonly setting: string, message: string) {
    super(message);
  }
}

/** The consumer lease in force: CONSUMER_LEASE_MS, or lib's default. */
export function consumerLease(
  config: Pick<Config, "CONSUMER_LEASE_MS" | "DELIVERY_TIMEOUT_MS">,
): number {
  return consumerLeaseMs({
    leaseMs: config.CONSUMER_LEASE_MS,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
  });
}

/** The stream's max_age in force, in days. */
export function natsMaxAgeDays(
  config: Pick<
    Config,
    "NATS_MAX_AGE_DAYS" | "REPLAY_HORIZON_DAYS" | "RETENTION_MARGIN_DAYS"
  >,
): number {
  return config.NATS_MAX_AGE_DAYS ??
    config.REPLAY_HORIZON_DAYS + config.RETENTION_MARGIN_DAYS;
}

/** Throws {@link BrokenPromise} for the first setting that breaks one. */
export function assertPromisesKept(config: Config): void {
  const horizon = config.REPLAY_HORIZON_DAYS;
  const kept = horizon + config.RETENTION_MARGIN_DAYS;
  if (config.RETENTION_DAYS !== undefined && kept < horizon) {
    throw new BrokenPromise(
      "RETENTION_DAYS",
      `RETENTION_DAYS (${config.RETENTION_DAYS}) is shorter than REPLAY_HORIZON_DAYS (${horizon}): a dead letter redriven within the horizon would find its receivers' inbox rows removed, and be applied twice`,
    );
  }
  if (
    config.QUEUE === "jetstream" && config.NATS_MAX_AGE_DAYS !== undefined &&
    config.NATS_MAX_AGE_DAYS < horizon
  ) {
    throw new BrokenPromise(
      "NATS_MAX_AGE_DAYS",
      `NATS_MAX_AGE_DAYS (${config.NATS_MAX_AGE_DAYS}) is shorter than REPLAY_HORIZON_DAYS (${horizon}): the JetStream stream would drop messages that can still be redriven`,
    );
  }
  const lease = consumerLease(config);
  if (lease < config.DELIVERY_TIMEOUT_MS) {
    throw new BrokenPromise(
      "CONSUMER_LEASE_MS",
      `CONSUMER_LEASE_MS (${lease}) is shorter than DELIVERY_TIMEOUT_MS (${config.DELIVERY_TIMEOUT_MS}), a batch's send timeout: another worker could take a batch over while it is still being sent, and a receiver would get it twice at once`,
    );
  }
  const retries = config.RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
  if (retries > horizon * DAY_MS) {
    throw new BrokenPromise(
      "RETRY_DELAYS_MS",
      `RETRY_DELAYS_MS (${config.RETRY_DELAYS_MS.join(",")}) add up to ${
        (retries / DAY_MS).toFixed(2)
      } days, past REPLAY_HORIZON_DAYS (${horizon}): a delivery would still be retrying when its message leaves the horizon, and its dead letter could no longer be redriven`,
    );
  }
}
