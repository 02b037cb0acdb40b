/**
 * Rate limits in memory, for one process: a fixed window of one minute per
 * key, opened by the key's first request. A request counts against every
 * key it carries (its session, its client address); when any of them is
 * full it is refused with 429 and a Retry-After of the seconds until that
 * window ends, and it counts against none. Several processes behind one
 * address would each keep their own counts.
 */
import type { Context, MiddlewareHandler } from "hono";
import { HttpError } from "./errors.ts";

const WINDOW_MS = 60_000;

/** Counts requests per key in one-minute windows. */
export class RateLimiter {
  #windows = new Map<string, { start: number; count: number }>();
  #swept = 0;

  constructor(
    readonly perMinute: number,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts one request against each key. Returns 0 when it may go on, or
   * the seconds to wait (1 to 60) when a key has used its minute.
   */
  take(keys: readonly string[]): number {
    const now = this.now();
    this.#sweep(now);
    let wait = 0;
    const windows = keys.map((key) => {
      let window = this.#windows.get(key);
      if (!window || now - window.start >= WINDOW_MS) {
        window = { start: now, count: 0 };
        this.#windows.set(key, window);
      }
      if (window.count >= this.perMinute) {
        const left = Math.ceil((window.start + WINDOW_MS - now) / 1000);
        wait = Math.max(wait, left, 1);
      }
      return window;
    });
    if (wait > 0) return wait;
    for (const window of windows) window.count++;
    return 0;
  }

  /** How many keys are held (for tests and metrics). */
  get size(): number {
    return this.#windows.size;
  }

  // Ended windows are dropped once a minute, so memory follows the number
  // of keys seen in the last minute, not since the start.
  #sweep(now: number) {
    if (now - this.#swept < WINDOW_MS) return;
    this.#swept = now;
    for (const [key, window] of this.#windows) {
      if (now - window.start >= WINDOW_MS) this.#windows.delete(key);
    }
  }
}

/**
 * The client's address. From the connection (Deno.serve's `remoteAddr`),
 * unless `trustProxy`: then the last entry of X-Forwarded-For, the one the
 * proxy in front added (the entries before it are the client's own word).
 * "unknown" when neither is there (an app called without a server).
 */
export function clientAddress(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header("x-forwarded-for") ?? "";
    const last = forwarded.split(",").pop()?.trim() ?? "";
    if (last) return last.slice(0, 64);
  }
  const env = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return env?.remoteAddr?.hostname ?? "unknown";
}

export interface RateLimitOptions {
  /** Requests per key per minute; 0 turns the limits off. */
  perMinute: number;
  /** Which count a request belongs to ("orders"), or undefined: no limit. */
  groupOf: (c: Context) => string | undefined;
  /** The keys a request counts against, e.g. its session and its address. */
  keysOf: (c: Context) => string[];
}

/**
 * A middleware that refuses a request over its group's limit with
 * HttpError(429) and Retry-After. Each group counts apart: placing orders
 * does not use up the console's minute.
 *
 * @example
 * ```ts
 * app.use("*", rateLimit({
 *   perMinute: 600,
 *   groupOf: (c) => c.req.method === "POST" ? "writes" : undefined,
 *   keysOf: (c) => [`addr ${clientAddress(c, false)}`],
 * }));
 * ```
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  if (options.perMinute === 0) return (_c, next) => next();
  const limiter = new RateLimiter(options.perMinute);
  return async (c, next) => {
    const group = options.groupOf(c);
    if (group) {
      const wait = limiter.take(
        options.keysOf(c).map((key) => `${group} ${key}`),
      );
      if (wait > 0) {
        throw new HttpError(
          429,
          `too many requests (${options.perMinute} a minute); try again in ${wait} s`,
          [],
          { "Retry-After": String(wait) },
        );
      }
    }
    await next();
  };
}
