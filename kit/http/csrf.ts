/**
 * Cross-site request protection for every state-changing request:
 *
 * - an `Origin` header that is not this site's: refused;
 * - a form post: its `_csrf` field must match the session's token;
 * - anything else (JSON, scripts): a same-site `Origin`, or an
 *   `X-CSRF-Token` header that matches the session's token;
 * - a request with neither: refused.
 *
 * GET, HEAD and OPTIONS never change state and pass. Paths under `exempt`
 * (the Stripe webhook, verified by its signature) pass too.
 */
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
