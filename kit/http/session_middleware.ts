/**
 * Sessions and CSRF on a Hono app. The middleware loads the session of the
 * cookie (if any) into the context, then refuses state-changing requests
 * that may be cross-site (kit/http/csrf.ts).
 *
 * Over https (the request's URL, or a `siteOrigin` with https when a TLS
 * proxy stands in front) the cookie is `__Host-bakery_session`, Secure, and
 * only that name is read: an unprefixed cookie can be planted by any http
 * page of the domain, so over https it is never a session. Over plain http
 * only the unprefixed name is read (a browser sends no Secure cookie there).
 */
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { checkCsrf } from "./csrf.ts";
import { readForm } from "./validate.ts";
import type { Session, SessionStore } from "./session.ts";

export const COOKIE = "bakery_session";
/** Over https the cookie is `__Host-` prefixed: Secure, Path=/, no Domain. */
const SECURE_COOKIE = `__Host-${COOKIE}`;

declare module "hono" {
  interface ContextVariableMap {
    session: Session | null;
    csrfToken: string;
    /** The site is served over https: the cookie is __Host- and Secure. */
    secureSession: boolean;
  }
}

export interface SessionOptions {
  store: SessionStore;
  /** Paths that skip CSRF checks (verified otherwise, e.g. by signature). */
  exempt?: (path: string) => boolean;
  /** This site's origin, when behind a proxy (PUBLIC_URL). */
  siteOrigin?: string;
}

/**
 * Whether the site is served over https: the site's origin says so when
 * there is one (behind a proxy the request's own URL is http), else the
 * request's URL.
 */
export function isHttps(c: Context, siteOrigin?: string): boolean {
  const origin = siteOrigin ?? new URL(c.req.url).origin;
  return origin.startsWith("https:");
}

export function sessionMiddleware(options: SessionOptions): MiddlewareHandler {
  return async (c, next) => {
    const https = isHttps(c, options.siteOrigin);
    c.set("secureSession", https);
    const token = getCookie(c, https ? SECURE_COOKIE : COOKIE);
    const session = await options.store.get(token);
    c.set("session", session);
    c.set("csrfToken", session?.csrfToken ?? "");
    if (!options.exempt?.(c.req.path)) {
      const type = c.req.header("content-type") ?? "";
      const isForm = type.startsWith("application/x-www-form-urlencoded") ||
        type.startsWith("multipart/form-data");
      let formToken: string | null | undefined;
      if (isForm && !["GET", "HEAD", "OPTIONS"].includes(c.req.method)) {
        const body = await readForm(c);
        formToken = typeof body._csrf === "string" ? body._csrf : null;
      }
      checkCsrf({
        method: c.req.method,
        url: c.req.url,
        origin: c.req.header("origin") ?? null,
        headerToken: c.req.header("x-csrf-token") ?? null,
        formToken,
        sessionToken: session?.csrfToken ?? null,
        siteOrigin: options.siteOrigin,
      });
    }
    await next();
  };
}

/**
 * Sets the session cookie: HttpOnly, SameSite=Lax; over https `__Host-`
 * and Secure.
 */
export function setSessionCookie(c: Context, token: string) {
  const https = c.get("secureSession") ?? isHttps(c);
  // With prefix "host", Hono names it __Host-bakery_session and checks the
  // prefix's rules (Secure, Path=/, no Domain).
  setCookie(c, COOKIE, token, {
    httpOnly: true,
    sameSite: "Lax",
    path: "/",
    secure: https,
    ...(https ? { prefix: "host" as const } : {}),
  });
}

export function clearSessionCookie(c: Context) {
  deleteCookie(c, COOKIE, { path: "/" });
  deleteCookie(c, SECURE_COOKIE, { path: "/", secure: true });
}

/** Puts a new session on the context and in a cookie. */
export function useSession(
  c: Context,
  created: { token: string; session: Session },
) {
  setSessionCookie(c, created.token);
  c.set("session", created.session);
  c.set("csrfToken", created.session.csrfToken);
}
