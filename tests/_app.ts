/**
 * The whole bakery on a test database: the web app on a free port, the
 * workers in process with short retry delays, and an HTTP client that keeps
 * its cookie and sends a same-site Origin, like a browser would.
 */
import { type Config, parseConfig } from "../config.ts";
import type { Deps } from "../deps.ts";
import type { Sql } from "../lib/db/connect.ts";
import { SessionStore } from "../lib/http/session.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { type Bakery, startBakery } from "../bakery.ts";
import { TestModeGateway } from "../services/billing/gateway.ts";
import { type TestDatabase, testDatabase } from "./_db.ts";

export const TEST_WEBHOOK_SECRET = "whsec_test_secret_for_the_suite";

/** Settings for tests: fast retries, a short poll, a known webhook secret. */
export function testConfig(env: Record<string, string> = {}): Config {
  return parseConfig({
    PORT: "0",
    WORKERS: "on",
    RETRY_DELAYS_MS: "100,200,300",
    RELAY_RETRY_MS: "200",
    POLL_INTERVAL_MS: "500",
    DELIVERY_TIMEOUT_MS: "2000",
    STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    DATA_DIR: Deno.makeTempDirSync({ prefix: "bakery-data-" }),
    ...env,
  });
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
    }),
    webhookSecret: TEST_WEBHOOK_SECRET,
  };
}

/** A client with a cookie jar and this site's Origin. */
export class Client {
  #cookies = new Map<string, string>();
  constructor(
    readonly base: string,
    readonly origin: string | null = new URL(base).origin,
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

  /** Sends JSON, returns status and parsed body. */
  async json<T = Record<string, unknown>>(
    method: string,
    path: string,
    json?: unknown,
  ): Promise<{ status: number; body: T }> {
    const response = await this.fetch(path, { method, json });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : (null as T),
    };
  }
}

export interface TestBakery {
  bakery: Bakery;
  db: TestDatabase;
  sql: Sql;
  url: string;
  client(): Client;
  lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** Starts the whole bakery on a fresh database. Always call stop(). */
export async function startTestBakery(
  env: Record<string, string> = {},
): Promise<TestBakery> {
  const db = await testDatabase({ max: 20 });
  const config = testConfig(env);
  const { logger, lines } = memoryLogger("info");
  const bakery = await startBakery({
    config,
    databaseUrl: db.url,
    log: logger,
    sql: db.sql,
  });
  return {
    bakery,
    db,
    sql: db.sql,
    url: bakery.url,
    lines,
    client: () => new Client(bakery.url),
    stop: async () => {
      await bakery.stop();
      await db.drop();
      await Deno.remove(config.DATA_DIR, { recursive: true }).catch(() => {});
    },
  };
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
  key = crypto.randomUUID(),
  fulfilment = "delivery",
) {
  return {
    items: [{ sku: "cardamom-bun", qty: 2 }, { sku: "country-loaf", qty: 1 }],
    customer: { name: "Ada Baker", email: "ada@example.com" },
    fulfilment,
    idempotencyKey: key,
  };
}
