/**
 * The whole bakery on a test database: the web app on a free port, the
 * workers in process with short retry delays, and an HTTP client that keeps
 * its cookie and sends a same-site Origin, like a browser would.
 */
import { type Config, parseConfig } from "../config.ts";
import type { Deps } from "../deps.ts";
import { connect, type Sql } from "../lib/db/connect.ts";
import { poolOf } from "../lib/db/service.ts";
import { SessionStore } from "../kit/http/session.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { type Bakery, startBakery } from "../bakery.ts";
import { TestModeGateway } from "../services/billing/gateway.ts";
import { ChangeFeed } from "../lib/wake/feed.ts";
import { Registry } from "../lib/metrics/mod.ts";
import { ROUTING, SENDERS } from "../services/routing.ts";
import {
  databaseNames,
  openServiceDatabases,
  type ServiceDatabases,
} from "../services/databases.ts";
import { dropDatabases } from "../kit/postgres/open.ts";
import { createBakeryMessaging, splitStream } from "../services/mod.ts";
import { adminUrl, type TestDatabase, testDatabase } from "./_db.ts";
import { dropStream, TEST_NATS_URL, testStream } from "./_nats.ts";
import { assertAnswerDocumented, CHECK_EVERY_ANSWER } from "./_openapi.ts";

export const TEST_WEBHOOK_SECRET = "whsec_test_secret_for_the_suite";

/**
 * Settings for tests: fast retries, a short poll, a known webhook secret, and
 * no daily wipe (a test running across 10:00 UTC would see its sandbox wiped
 * and its session ended; tests/wipe_test.ts runs the wipe itself).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return parseConfig({
    ...transportEnv(),
    ...databasesEnv(),
    PORT: "0",
    WORKERS: "on",
    SANDBOX_WIPE: "off",
    RETRY_DELAYS_MS: "100,200,300",
    RELAY_RETRY_MS: "200",
    POLL_INTERVAL_MS: "500",
    DELIVERY_TIMEOUT_MS: "2000",
    STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    DATA_DIR: Deno.makeTempDirSync({ prefix: "bakery-data-" }),
    ...env,
  });
}

/**
 * TEST_QUEUE=jetstream runs every test bakery over JetStream (TEST_NATS_URL),
 * each on a stream of its own, removed when it stops: the bakery's tests as
 * a conformance run of the second transport.
 */
function transportEnv(): Record<string, string> {
  if (Deno.env.get("TEST_QUEUE") !== "jetstream") return {};
  return {
    QUEUE: "jetstream",
    NATS_URL: TEST_NATS_URL,
    NATS_STREAM: testStream(),
  };
}

/**
 * TEST_SERVICE_DATABASES=split runs every test bakery with a database per
 * service (SERVICE_DATABASES=split): the bakery's tests as a run of split
 * mode. A test that names SERVICE_DATABASES itself keeps its own.
 */
function databasesEnv(): Record<string, string> {
  const mode = Deno.env.get("TEST_SERVICE_DATABASES");
  return mode ? { SERVICE_DATABASES: mode } : {};
}

/** Deps without a server, for tests that call `createApp(...).fetch`. */
export function testDeps(sql: Sql, config = testConfig()): Deps {
  const { logger } = memoryLogger("error");
  return {
    config,
    sql,
    log: logger,
    sessions: new SessionStore(sql),
    gateway: new TestModeGateway({
      sql,
      log: logger,
      webhookSecret: TEST_WEBHOOK_SECRET,
      webhookUrl: () => "http://127.0.0.1:9/webhooks/stripe",
      pollMs: config.POLL_INTERVAL_MS,
      retryDelaysMs: config.CHECKOUT_RETRY_DELAYS_MS,
    }),
    webhookSecret: TEST_WEBHOOK_SECRET,
    // Never started: tests that use testDeps open no event stream.
    feed: new ChangeFeed({ url: "postgres://unused", log: logger }),
    metrics: new Registry(),
    closing: new AbortController().signal,
    // Never started: what the console asks of it needs no loops.
    messaging: createBakeryMessaging({
      sql,
      log: logger,
      config,
      url: "postgres://unused",
    }),
  };
}

/** What a test client does besides sending requests. */
export interface ClientOptions {
  /**
   * Check every answer of `json()` against the OpenAPI document
   * (tests/_openapi.ts); on for every client with TEST_OPENAPI=on.
   */
  checkAnswers?: boolean;
}

/** A client with a cookie jar and this site's Origin. */
export class Client {
  #cookies = new Map<string, string>();
  constructor(
    readonly base: string,
    readonly origin: string | null = new URL(base).origin,
    readonly options: ClientOptions = {},
  ) {}

  async fetch(
    path: string,
    init: RequestInit & { json?: unknown } = {},
  ): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.#cookies.size) {
      headers.set(
        "cookie",
        [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      );
    }
    if (this.origin && !headers.has("origin")) {
      headers.set("origin", this.origin);
    }
    let body = init.body;
    if (init.json !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(init.json);
    }
    const response = await fetch(new URL(path, this.base), {
      ...init,
      headers,
      body,
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(";");
      const [name, value] = pair.split("=");
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(cookie)) {
        this.#cookies.delete(name);
      } else this.#cookies.set(name, value);
    }
    return response;
  }

  /** The value of cookie `name` in the jar, if any. */
  cookie(name: string): string | undefined {
    return this.#cookies.get(name);
  }

  /** A client with a copy of this one's cookies and another Origin. */
  withOrigin(origin: string | null): Client {
    const other = new Client(this.base, origin, this.options);
    for (const [k, v] of this.#cookies) other.#cookies.set(k, v);
    return other;
  }

  /**
   * Sends JSON, returns status and parsed body; with `checkAnswers`, fails
   * unless the body is what the OpenAPI document says for it.
   */
  async json<T = Record<string, unknown>>(
    method: string,
    path: string,
    json?: unknown,
  ): Promise<{ status: number; body: T }> {
    const response = await this.fetch(path, { method, json });
    const text = await response.text();
    const body = text ? JSON.parse(text) : (null as T);
    if (this.options.checkAnswers ?? CHECK_EVERY_ANSWER) {
      assertAnswerDocumented(method, path, response.status, body);
    }
    return { status: response.status, body };
  }
}

export interface TestBakery {
  bakery: Bakery;
  db: TestDatabase;
  sql: Sql;
  /** With SERVICE_DATABASES=split: every service's database. */
  databases?: ServiceDatabases;
  /**
   * The pool of `service`'s database: `sql` itself with one database. A
   * test reads a service's tables through it, so that it runs in split
   * mode too.
   */
  at(service: string): Sql;
  /**
   * Over JetStream, the stream that carries `sender`'s messages: the
   * bakery's one stream, or in split mode the sender's own.
   */
  streamOf(sender: string): string;
  /** Where to send requests (the server itself, even behind PUBLIC_URL). */
  url: string;
  /** A client of `url` whose Origin is the site's (PUBLIC_URL's, if set). */
  client(options?: ClientOptions): Client;
  lines: Record<string, unknown>[];
  /**
   * Stops the bakery and starts another on the same databases, as the
   * next process would; `between` runs while neither is up. `bakery` and
   * `url` are the new one's afterwards.
   */
  restart(between?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs `fn` against the whole bakery on a fresh database, and stops it
 * afterwards whatever `fn` did.
 */
export async function withTestBakery<T>(
  fn: (t: TestBakery) => Promise<T>,
  env: Record<string, string> = {},
  options: TestBakeryOptions = {},
): Promise<T> {
  const t = await startTestBakery(env, options);
  try {
    return await fn(t);
  } finally {
    await t.stop();
  }
}

/** How {@link startTestBakery} connects. */
export interface TestBakeryOptions {
  /**
   * The URL the bakery connects to instead of its database's own, such as
   * a proxy's in front of that server; every pool goes through it.
   */
  through?: (url: string) => string;
}

/** Starts the whole bakery on a fresh database. Always call stop(). */
export async function startTestBakery(
  env: Record<string, string> = {},
  options: TestBakeryOptions = {},
): Promise<TestBakery> {
  const db = await testDatabase({ max: 20 });
  const config = testConfig(env);
  const { logger, lines } = memoryLogger("info");
  const url = options.through?.(db.url) ?? db.url;
  // Split mode: every service's database is named after the test's own,
  // which holds nothing of theirs.
  const databases = config.SERVICE_DATABASES === "split"
    ? await openServiceDatabases(url, logger)
    : undefined;
  const own = options.through && !databases
    ? connect(url, { max: 20 })
    : undefined;
  const sql = databases?.main ?? own ?? db.sql;
  const start = () =>
    startBakery({
      config,
      databaseUrl: databases?.urls.get("console") ?? url,
      log: logger,
      sql,
      databases,
    });
  const bakery = await start();
  const t: TestBakery = {
    bakery,
    db,
    sql,
    databases,
    at: (service) => poolOf(sql, service),
    streamOf: (sender) =>
      databases ? splitStream(config.NATS_STREAM, sender) : config.NATS_STREAM,
    url: bakery.localUrl,
    lines,
    client: (options) =>
      new Client(t.bakery.localUrl, new URL(t.bakery.url).origin, options),
    restart: async (between) => {
      await t.bakery.stop();
      await between?.();
      t.bakery = await start();
      t.url = t.bakery.localUrl;
    },
    stop: async () => {
      await t.bakery.stop();
      if (config.QUEUE === "jetstream") {
        const streams = databases
          ? SENDERS.map((s) => splitStream(config.NATS_STREAM, s))
          : [config.NATS_STREAM];
        for (const stream of streams) await dropStream(stream);
      }
      if (databases) {
        await databases.close();
        await dropDatabases(adminUrl(), databaseNames(databases.urls));
      }
      await own?.end({ timeout: 5 });
      await db.drop();
      await Deno.remove(config.DATA_DIR, { recursive: true }).catch(() => {});
    },
  };
  return t;
}

/** Polls until `check` is true, or fails after `timeoutMs`. */
export async function eventually(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** The order the walkthrough uses: two cardamom buns and a country loaf. */
export function walkthroughOrder(
  key: string = crypto.randomUUID(),
  fulfilment = "delivery",
) {
  return {
    items: [{ sku: "cardamom-bun", qty: 2 }, { sku: "country-loaf", qty: 1 }],
    customer: { name: "Ada Baker", email: "ada@example.com" },
    fulfilment,
    idempotencyKey: key,
  };
}

/** The number from a `select count(*)::int as n ...` query. */
export async function countOf(
  query: PromiseLike<readonly { n: number }[]>,
): Promise<number> {
  const [row] = await query;
  return row.n;
}

/**
 * The messages `service` wrote, owed or published, as a subquery to name
 * after `from` with an alias: its outbox rows, and the copies in
 * queue.messages of those already published (the outbox row is deleted
 * then). Columns: message_id, tenant_id, type, envelope.
 */
export function sentBy(sql: Sql, service: string) {
  return sql`(
    select message_id, tenant_id, type, envelope from ${
    sql(`${service}.outbox`)
  } o
     where not exists (
       select from queue.messages m where m.message_id = o.message_id)
    union all
    select message_id, tenant_id, type, envelope from queue.messages
     where source = ${service})`;
}

/** Tables that a command (order, payment, session) writes to. */
export const COMMAND_TABLES = [
  "platform.tenants",
  "platform.sessions",
  "orders.orders",
  "orders.lines",
  "orders.events",
  "orders.commands_seen",
  "orders.outbox",
  "billing.payments",
  "billing.stripe_events",
  "billing.outbox",
] as const;

/**
 * Row counts of `tables`, plus the capacity promised per day and product
 * (`orders.day_counts`), so that "nothing was written" is one deepEqual.
 */
export async function rowCounts(
  sql: Sql,
  tables: readonly string[] = COMMAND_TABLES,
): Promise<Record<string, number | string>> {
  const counts: Record<string, number | string> = {};
  for (const table of tables) {
    // Each in its service's database (platform's: the console's).
    const schema = table.slice(0, table.indexOf("."));
    const at = poolOf(sql, schema);
    // An outbox counts the messages written to it, published or not.
    const from = table.endsWith(".outbox")
      ? at`${sentBy(at, schema)} x`
      : at`${at(table)}`;
    counts[table] = await countOf(
      at<{ n: number }[]>`select count(*)::int as n from ${from}`,
    );
  }
  const days = await poolOf(sql, "orders")<{ key: string; qty: number }[]>`
    select tenant_id || '/' || day || '/' || sku as key, qty
      from orders.day_counts order by 1`;
  counts["orders.day_counts"] = days.map((d) => `${d.key}=${d.qty}`).join(
    ",",
  );
  return counts;
}

/** The subset of `GET /api/orders/:id` that tests read. */
export interface OrderJson {
  orderId: string;
  state: string;
  totalCents: number;
  paymentRef: string | null;
  fulfilment: string;
  events: { type: string; version: number; at: string; messageId: string }[];
  messages: {
    messageId: string;
    service: string;
    eventType: string;
    state: string;
    traceId: string | null;
  }[];
  deliveries: {
    messageId: string;
    eventType: string;
    subscriber: string;
    state: string;
    attempts: number;
    lastError: string | null;
  }[];
  kitchenCard: { state: string; version: number } | null;
}

/**
 * Waits until the order is in `state` and its story is finished: every
 * message it caused is published and every subscriber of each (by the
 * routing table) has a delivery, all of them done.
 */
export async function orderSettles(
  client: Client,
  orderId: string,
  state: string,
  timeoutMs = 10_000,
): Promise<OrderJson> {
  let last: OrderJson | undefined;
  try {
    await eventually(`order ${orderId} to settle as ${state}`, async () => {
      const { status, body } = await client.json<OrderJson>(
        "GET",
        `/api/orders/${orderId}`,
      );
      if (status !== 200) throw new Error(`GET order answered ${status}`);
      last = body;
      if (body.state !== state) return false;
      const owed = body.messages.reduce(
        (sum, m) => sum + (ROUTING[m.eventType]?.length ?? 0),
        0,
      );
      return body.messages.every((m) => m.state === "published") &&
        body.deliveries.length === owed &&
        body.deliveries.every((d) => d.state === "done");
    }, timeoutMs);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; last seen: ${JSON.stringify(last)}`,
    );
  }
  return last!;
}

/** Places an order through the API; fails unless it answers 201. */
export async function placeOrderVia(
  client: Client,
  order: unknown = walkthroughOrder(),
): Promise<{ orderId: string; totalCents: number }> {
  const { status, body } = await client.json<
    { orderId: string; totalCents: number }
  >("POST", "/api/orders", order);
  if (status !== 201) {
    throw new Error(
      `placing an order answered ${status}: ${JSON.stringify(body)}`,
    );
  }
  return body;
}

/** A Stripe `payment_intent.*` event for an order, as the gateway builds it. */
export function paymentIntentEvent(p: {
  sandboxId: string;
  orderId: string;
  paymentId: string;
  amountCents: number;
  type?: "payment_intent.succeeded" | "payment_intent.payment_failed";
  eventId?: string;
}) {
  const ok = (p.type ?? "payment_intent.succeeded") ===
    "payment_intent.succeeded";
  return {
    id: p.eventId ?? `evt_test_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    api_version: "2025-01-27",
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: p.type ?? "payment_intent.succeeded",
    data: {
      object: {
        id: p.paymentId,
        object: "payment_intent",
        amount: p.amountCents,
        currency: "eur",
        status: ok ? "succeeded" : "requires_payment_method",
        metadata: { sandboxId: p.sandboxId, orderId: p.orderId },
        last_payment_error: ok ? null : { message: "Your card was declined." },
      },
    },
  };
}

/**
 * Posts `payload` to `/webhooks/stripe` with `signature` as the
 * Stripe-Signature header (none when null); returns status and body.
 */
export async function postWebhook(
  url: string,
  payload: string,
  signature: string | null,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers = new Headers({ "content-type": "application/json" });
  if (signature !== null) headers.set("stripe-signature", signature);
  const response = await fetch(new URL("/webhooks/stripe", url), {
    method: "POST",
    headers,
    body: payload,
  });
  return { status: response.status, body: await response.json() };
}

/** Signs `client` in as `name` (`POST /api/session`); fails unless 201. */
export async function signIn(
  client: Client,
  name = "Operator",
): Promise<{ sandboxId: string; name: string }> {
  const { status, body } = await client.json<
    { sandboxId: string; name: string }
  >("POST", "/api/session", { name });
  if (status !== 201) {
    throw new Error(`signing in answered ${status}: ${JSON.stringify(body)}`);
  }
  return body;
}

/** Pays an order with a test card; fails unless it answers 202. */
export async function payVia(
  client: Client,
  orderId: string,
  card = "4242424242424242",
): Promise<{ paymentId: string }> {
  const { status, body } = await client.json<{ paymentId: string }>(
    "POST",
    `/api/orders/${orderId}/pay`,
    { card },
  );
  if (status !== 202) {
    throw new Error(`paying answered ${status}: ${JSON.stringify(body)}`);
  }
  return body;
}

/** A delivery as the console lists it (`GET /api/console/deliveries`). */
export interface DeliveryJson {
  id: number;
  messageId: string;
  eventType: string;
  subscriber: string;
  orderId: string;
  state: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deadAt: string | null;
  redrives: number;
  refusedReason: string | null;
  refusedBy: string | null;
  refusedAt: string | null;
}

/** The dead letters of the client's sandbox, oldest first; `query` filters. */
export async function deadLettersOf(
  client: Client,
  query = "",
): Promise<DeliveryJson[]> {
  const { status, body } = await client.json<{ items: DeliveryJson[] }>(
    "GET",
    `/api/console/dead-letters${query ? `?${query}` : ""}`,
  );
  if (status !== 200) {
    throw new Error(`dead letters answered ${status}: ${JSON.stringify(body)}`);
  }
  return body.items;
}

/**
 * Waits until the client's sandbox holds `count` dead letters matching
 * `query` and none of its deliveries is still open (pending or in flight),
 * so that the count can no longer grow; returns them, oldest first.
 */
export async function deadLettersSettle(
  client: Client,
  count: number,
  query = "",
  timeoutMs = 10_000,
): Promise<DeliveryJson[]> {
  let dead: DeliveryJson[] = [];
  let open = -1;
  try {
    await eventually(`${count} dead letters (${query || "all"})`, async () => {
      dead = await deadLettersOf(client, query);
      const { body } = await client.json<{ counts: Record<string, number> }>(
        "GET",
        "/api/console/deliveries",
      );
      open = body.counts.pending + body.counts.in_flight;
      return dead.length === count && open === 0;
    }, timeoutMs);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; ${open} open, dead: ${
        JSON.stringify(dead)
      }`,
    );
  }
  return dead;
}

/**
 * Flips fault switches of the client's sandbox through the console's API;
 * asserts the answer says each is as asked, and returns every switch.
 */
export async function setFaults(
  client: Client,
  faults: Record<string, boolean>,
): Promise<Record<string, boolean>> {
  const { status, body } = await client.json<Record<string, boolean>>(
    "PUT",
    "/api/console/faults",
    faults,
  );
  const wrong = Object.entries(faults).filter(([name, on]) =>
    body[name] !== on
  );
  if (status !== 200 || wrong.length > 0) {
    throw new Error(
      `PUT /api/console/faults answered ${status}: ${JSON.stringify(body)}`,
    );
  }
  return body;
}
