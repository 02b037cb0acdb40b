/**
 * The environment, read once and validated with zod. Plays the role that
 * `fresh.config.ts` plays in a Fresh project: every setting the program reads
 * is named here, with its default and what it means (docs/settings.md is the
 * same list).
 */
import { z } from "zod";
import { assertPromisesKept, BrokenPromise } from "./promises.ts";

const int = (min: number, max: number) =>
  z.string().trim().refine((s) => {
    const n = Number(s);
    return /^\d+$/.test(s) && n >= min && n <= max;
  }, `an integer from ${min} to ${max}`).transform(Number);

const msList = z.string().trim().regex(
  /^\d+(,\d+)*$/,
  "a comma-separated list of milliseconds, such as 1000,5000,25000",
).transform((s) => s.split(",").map(Number));

const ratio = z.string().trim().refine((s) => {
  const n = Number(s);
  return /^(0(\.\d+)?|1(\.0+)?)$/.test(s) && n >= 0 && n <= 1;
}, "a number from 0 to 1, such as 0.9").transform(Number);

const HOST_NAME =
  /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;

/** `host` as the URL parser writes a request's hostname, or null. */
function hostnameOf(host: string): string | null {
  if (!HOST_NAME.test(host)) return null;
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
}

// Compared with the hostname of each request's URL, so each entry is kept
// as the URL parser writes it (lower case, IPv6 shortened, in brackets).
const hostList = z.string().trim().transform((s, ctx) => {
  const hosts = s.split(",").map((h) => hostnameOf(h.trim().toLowerCase()));
  if (hosts.every((h) => h !== null)) return hosts as string[];
  ctx.issues.push({
    code: "custom",
    input: s,
    message:
      "a comma-separated list of host names or addresses without a port, such as bakery.lan,192.168.1.20",
  });
  return z.NEVER;
});

const postgresUrl = z.string().trim().regex(
  /^postgres(ql)?:\/\//,
  "a postgres:// URL",
);

const schema = z.object({
  PORT: int(0, 65535).default(8000),
  HOST: z.string().trim().min(1, "a host name or address").default(
    "127.0.0.1",
  ),
  DATABASE_URL: postgresUrl.optional(),
  DATA_DIR: z.string().trim().min(1, "a directory").default(".data"),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  PUBLIC_URL: z.string().trim().url("an absolute URL").optional(),
  // Without PUBLIC_URL, the hosts besides loopback that state-changing
  // requests may name (kit/http/csrf.ts): another name resolving here could
  // be a DNS-rebinding page, so none is trusted unless listed.
  ALLOWED_HOSTS: hostList.default([]),
  STRIPE_SECRET_KEY: z.string().trim().startsWith(
    "sk_",
    "a Stripe secret key starting with sk_",
  ).optional(),
  // Where the Stripe client sends its API requests: Stripe's own by
  // default; a Stripe API stand-in (stripe-mock, or a test's) otherwise.
  STRIPE_API_URL: z.string().trim().url("an absolute URL").optional(),
  STRIPE_WEBHOOK_SECRET: z.string().trim().startsWith(
    "whsec_",
    "a Stripe webhook secret starting with whsec_",
  ).optional(),
  POLL_INTERVAL_MS: int(10, 3_600_000).default(5000),
  RELAY_RETRY_MS: int(0, 86_400_000).default(30000),
  DELIVERY_TIMEOUT_MS: int(1, 600_000).default(5000),
  RETRY_DELAYS_MS: msList.default([1000, 5000, 25000]),
  // The test checkout's webhook retries after each failed post: Stripe's
  // three days, compressed to 68 minutes over 12 posts
  // (services/billing/checkout_events.ts).
  CHECKOUT_RETRY_DELAYS_MS: msList.default([
    1_000,
    2_000,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    1_200_000,
    1_800_000,
  ]),
  REPLAY_HORIZON_DAYS: int(1, 3650).default(30),
  WORKERS: z.enum(["on", "off"]).default("on"),
  QUEUE: z.enum(["postgres", "jetstream"]).default("postgres"),
  // One database for every service, or one each (services/databases.ts).
  SERVICE_DATABASES: z.enum(["shared", "split"]).default("shared"),
  // One server, or several of one cluster, comma-separated: the client
  // picks one and moves to another when it goes away.
  NATS_URL: z.string().trim().regex(
    /^(nats|tls|wss?):\/\/[^\s,]+(\s*,\s*(nats|tls|wss?):\/\/[^\s,]+)*$/,
    "a nats:// URL, such as nats://127.0.0.1:4222, or several comma-separated",
  ).default("nats://127.0.0.1:4222"),
  // Copies of the stream JetStream keeps, on as many servers of a cluster:
  // 3 survives the loss of any one server. The lanes follow the stream.
  NATS_REPLICAS: int(1, 5).default(1),
  // Stream, subject and consumer names are made from it: letters, digits,
  // dashes and underscores only (no dots, which separate subject tokens).
  NATS_STREAM: z.string().trim().regex(
    /^[A-Za-z0-9_-]{1,64}$/,
    "1 to 64 letters, digits, dashes or underscores",
  ).default("BAKERY"),
  SANDBOX_WIPE: z.enum(["on", "off"]).default("on"),
  // Finished work is removed this many days after the replay horizon
  // (services/retention.ts).
  RETENTION: z.enum(["on", "off"]).default("on"),
  RETENTION_MARGIN_DAYS: int(0, 3650).optional(),
  // The same as a total: finished work is kept this many days. Either this
  // or RETENTION_MARGIN_DAYS; never shorter than the replay horizon.
  RETENTION_DAYS: int(1, 7300).optional(),
  // How long the JetStream stream keeps a message (max_age), set on the
  // stream at every start; default what the ledger keeps (the horizon plus
  // the retention margin). Never shorter than the replay horizon.
  NATS_MAX_AGE_DAYS: int(1, 7300).optional(),
  // A consumer's lease on a batch of deliveries; default four answer
  // timeouts, at least 10 s (lib/delivery/send.ts). Never shorter than
  // DELIVERY_TIMEOUT_MS, a batch's send timeout.
  CONSUMER_LEASE_MS: int(1, 3_600_000).optional(),
  // How often each worker process writes its heartbeat (the console's
  // Workers page): three missed beats and it is shown silent.
  WORKER_BEAT_MS: int(50, 600_000).default(5000),
  // The version each worker reports beside its heartbeat (a release tag,
  // a commit).
  APP_VERSION: z.string().trim().regex(
    /^[A-Za-z0-9._+-]{1,80}$/,
    "1 to 80 letters, digits or ._+-, such as 1.4.2 or a commit",
  ).default("dev"),
  RATE_LIMIT_PER_MINUTE: int(0, 1_000_000).default(600),
  // The console's alerts (services/console/alerts.ts) and the same rules for
  // Prometheus (ops/prometheus/alerts.yml, written with these defaults).
  ALERT_OUTBOX_AGE_S: int(1, 604_800).default(60),
  ALERT_DEAD_LETTERS: int(1, 1_000_000).default(1),
  ALERT_SUCCESS_RATE: ratio.default(0.9),
  // Fewer attempts than this in the window raise no success_rate alert: one
  // refused attempt of a quiet receiver is not a rate.
  ALERT_SUCCESS_MIN_ATTEMPTS: int(1, 1_000_000).default(10),
  METRICS_TOKEN: z.string().trim().regex(
    /^[A-Za-z0-9._~+/-]{16,}=*$/,
    "a token of at least 16 letters, digits or ._~+/-",
  ).optional(),
});

/**
 * The validated settings. `DATABASE_URLS` holds each
 * `DATABASE_URL_<SERVICE>` that is set, by service, lower case.
 */
export type Config =
  & Omit<z.output<typeof schema>, "RETENTION_MARGIN_DAYS">
  & {
    DATABASE_URLS: Record<string, string>;
    /** Resolved: given, or RETENTION_DAYS less the horizon, or 7. */
    RETENTION_MARGIN_DAYS: number;
  };

/** `DATABASE_URL_<SERVICE>`: one service's database elsewhere. */
const SERVICE_URL = /^DATABASE_URL_([A-Z_]+)$/;

/** A setting that is missing or malformed; `message` is one line for people. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Validates an environment. Empty strings count as unset, so `PORT= deno task
 * start` means the default, as it does in most tools.
 *
 * @example
 * ```ts
 * const config = parseConfig({ PORT: "8080" });
 * config.PORT; // 8080
 * ```
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  const result = schema.safeParse(input);
  if (!result.success) throw configError(result.error, input);
  const config: Config = {
    ...result.data,
    RETENTION_MARGIN_DAYS: retentionMargin(result.data),
    DATABASE_URLS: serviceUrls(env),
  };
  const moved = Object.keys(config.DATABASE_URLS);
  if (moved.length && config.SERVICE_DATABASES !== "split") {
    throw new ConfigError(
      `DATABASE_URL_${
        moved[0].toUpperCase()
      } is read only with SERVICE_DATABASES=split`,
    );
  }
  // Split mode names a stream per sender: NATS_STREAM, "_" and the sender.
  if (
    config.SERVICE_DATABASES === "split" && config.NATS_STREAM.length > 56
  ) {
    throw new ConfigError(
      "NATS_STREAM must be at most 56 characters with SERVICE_DATABASES=split",
    );
  }
  try {
    assertPromisesKept(config);
  } catch (error) {
    if (error instanceof BrokenPromise) throw new ConfigError(error.message);
    throw error;
  }
  return config;
}

/** The retention margin, from RETENTION_MARGIN_DAYS or RETENTION_DAYS. */
function retentionMargin(data: z.output<typeof schema>): number {
  if (data.RETENTION_DAYS === undefined) return data.RETENTION_MARGIN_DAYS ?? 7;
  if (data.RETENTION_MARGIN_DAYS !== undefined) {
    throw new ConfigError(
      "RETENTION_DAYS and RETENTION_MARGIN_DAYS say the same thing: set one",
    );
  }
  return data.RETENTION_DAYS - data.REPLAY_HORIZON_DAYS;
}

function configError(
  error: z.ZodError,
  input: Record<string, string>,
): ConfigError {
  const issue = error.issues[0];
  const name = String(issue.path[0]);
  const given = input[name];
  return new ConfigError(
    `${name} must be ${describe(issue)}` +
      (given === undefined ? "" : ` (got ${JSON.stringify(given)})`),
  );
}

/**
 * Each `DATABASE_URL_<SERVICE>` set, checked as a URL, by service. Whether
 * the service exists is the layout's to say (services/databases.ts,
 * `checkServiceUrls`), which the programs pass to {@link loadConfig}.
 */
function serviceUrls(
  env: Record<string, string | undefined>,
): Record<string, string> {
  const urls: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    const service = SERVICE_URL.exec(key)?.[1].toLowerCase();
    if (service === undefined || value === undefined || value === "") continue;
    const url = postgresUrl.safeParse(value);
    if (!url.success) {
      throw configError(
        new z.ZodError(url.error.issues.map((i) => ({ ...i, path: [key] }))),
        { [key]: value },
      );
    }
    urls[service] = url.data;
  }
  return urls;
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_value") {
    return `one of ${issue.values.map(String).join(", ")}`;
  }
  return issue.message;
}

/**
 * Reads `Deno.env` once, then runs the program's own `checks` of it (each
 * throws {@link ConfigError}); on a bad setting prints one line and exits 1.
 */
export function loadConfig(...checks: ((config: Config) => void)[]): Config {
  try {
    const config = parseConfig(Deno.env.toObject());
    for (const check of checks) check(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`config error: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
}
