/**
 * Cross-site request protection for every state-changing request:
 *
 * - without a configured site origin (PUBLIC_URL), a `Host` that is not a
 *   loopback name or address nor an allowed host: refused (`checkHost`);
 * - an `Origin` header that is not this site's: refused;
 * - a form post: its `_csrf` field must match the session's token;
 * - anything else (JSON, scripts): a same-site `Origin`, or an
 *   `X-CSRF-Token` header that matches the session's token;
 * - a request with neither: refused.
 *
 * GET, HEAD and OPTIONS never change state and pass. Paths under `exempt`
 * (the Stripe webhook, verified by its signature) pass too.
 */
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./errors.ts";

export interface CsrfCheck {
  method: string;
  url: string;
  origin: string | null;
  headerToken: string | null;
  /** The `_csrf` field of a form post; undefined when not a form. */
  formToken?: string | null;
  /** The session's token, if there is a session. */
  sessionToken: string | null;
  /** This site's origin, e.g. PUBLIC_URL's; defaults to the request URL's. */
  siteOrigin?: string;
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/** Throws HttpError(403) when the request may be cross-site. */
export function checkCsrf(check: CsrfCheck) {
  if (SAFE.has(check.method)) return;
  const site = check.siteOrigin ?? new URL(check.url).origin;
  if (check.origin !== null && check.origin !== site) {
    throw new HttpError(
      403,
      `cross-site request refused (Origin ${check.origin})`,
    );
  }
  const matches = (token: string | null | undefined) =>
    !!token && !!check.sessionToken &&
    timingSafeEqual(token, check.sessionToken);
  if (check.formToken !== undefined) {
    if (matches(check.formToken)) return;
    throw new HttpError(
      403,
      "form refused: missing or wrong CSRF token; reload the page",
    );
  }
  if (check.origin === site || matches(check.headerToken)) return;
  throw new HttpError(
    403,
    "request refused: send a same-site Origin header or X-CSRF-Token",
  );
}

function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Whether `hostname` (as the URL parser writes it: lower case, IPv6 in
 * brackets) names this machine's loopback: `localhost`, 127.0.0.0/8 or
 * [::1]. A browser reaches these only on the machine itself.
 */
export function isLoopback(hostname: string): boolean {
  if (hostname === "localhost" || hostname === "[::1]") return true;
  const octets = hostname.split(".");
  return octets.length === 4 && octets[0] === "127" &&
    octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255);
}

export interface HostCheck {
  method: string;
  /** The request's URL: Deno.serve builds it from the `Host` header. */
  url: string;
  /** This site's origin (PUBLIC_URL's); when set, `Host` is not looked at. */
  siteOrigin?: string;
  /** Host names or addresses accepted besides loopback (ALLOWED_HOSTS). */
  allowedHosts?: readonly string[];
}

/**
 * Throws HttpError(403) for a state-changing request whose `Host` this
 * site does not answer to. Without PUBLIC_URL the site's origin is taken
 * from `Host`, so a page on another name that resolves to this machine (DNS
 * rebinding) would be same-origin with it: its `Origin` and its `Host` agree.
 * Only names that cannot be rebound (loopback) or that the operator listed
 * pass; the port is not compared.
 */
export function checkHost(check: HostCheck) {
  if (SAFE.has(check.method) || check.siteOrigin !== undefined) return;
  const { hostname } = new URL(check.url);
  if (isLoopback(hostname) || check.allowedHosts?.includes(hostname)) return;
  throw new HttpError(
    403,
    `request refused: host ${
      JSON.stringify(hostname.slice(0, 100))
    } is not this site's; set PUBLIC_URL or ALLOWED_HOSTS to serve it`,
  );
}

/**
 * `checkHost` as a middleware, for every request but the paths under
 * `exempt` (the Stripe webhook, verified by its signature).
 *
 * @example
 * ```ts
 * app.use("*", hostGuard({ allowedHosts: ["bakery.lan"] }));
 * ```
 */
export function hostGuard(
  options: Omit<HostCheck, "method" | "url"> & {
    exempt?: (path: string) => boolean;
  },
): MiddlewareHandler {
  return async (c, next) => {
    if (!options.exempt?.(c.req.path)) {
      checkHost({ ...options, method: c.req.method, url: c.req.url });
    }
    await next();
  };
}
