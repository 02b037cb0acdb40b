/**
 * What every console page does first: find the signed-in operator, or send
 * the visitor to the sign-in page with a way back. A guest session (no name)
 * counts as signed out here: the console shows who did what, so it needs a
 * name to show.
 */
import type { Context } from "hono";
import type { Operator } from "../_console_page.tsx";
import type { AlertBoard } from "../../services/console/alert_episodes.ts";

/** A console page: renders for a signed-in operator. */
export type ConsoleRender = (
  c: Context,
  operator: Operator,
) => Response | Promise<Response>;

/**
 * Where to go after signing in: a console or lab path of this site, nothing
 * else.
 * Anything else (another host, `//evil`, `javascript:`, a path that `..`
 * takes out of the console) becomes `/console`, so the sign-in page cannot
 * be used to send people elsewhere. A control character (CR, LF, NUL, tab)
 * is refused outright: in a Location header it would split the header, and
 * the URL parser would silently drop some of them. What is kept comes back
 * as the URL parser writes it, percent-encoded, so it is plain ASCII.
 *
 * @example
 * ```ts
 * safeNext("/console/outbox"); // "/console/outbox"
 * safeNext("https://example.com/"); // "/console"
 * safeNext("/console\r\nSet-Cookie: x=1"); // "/console"
 * ```
 */
export function safeNext(raw: unknown): string {
  const fallback = "/console";
  if (typeof raw !== "string" || raw.length > 2000) return fallback;
  // deno-lint-ignore no-control-regex -- control characters are the point
  if (/[\u0000-\u001f\u007f\\]/.test(raw) || !raw.startsWith("/")) {
    return fallback;
  }
  const base = "http://site.invalid";
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return fallback;
  }
  if (url.origin !== base) return fallback;
  const next = url.pathname + url.search + url.hash;
  return /^\/(?:console|labs)(?:[/?#]|$)/.test(next) ? next : fallback;
}

/**
 * The alerts of a sandbox and its dead letters, for the banner and the side
 * bar every console page opens with.
 */
export type AlertSource = (sandboxId: string) => Promise<AlertBoard>;

/**
 * Wraps a console page: signed out (or a guest) is a 303 to
 * `/sign-in?next=<this page>`; signed in renders, never cached (the page is
 * one sandbox's data). With `alerts`, the operator carries the sandbox's
 * alerts for the page's banner.
 *
 * @example
 * ```ts
 * app.get("/console", consolePage((c, operator) => overviewPage(operator)));
 * ```
 */
export function consolePage(render: ConsoleRender, alerts?: AlertSource) {
  return async (c: Context): Promise<Response> => {
    const session = c.get("session");
    if (!session?.name) {
      const url = new URL(c.req.url);
      const next = encodeURIComponent(url.pathname + url.search);
      return c.redirect(`/sign-in?next=${next}`, 303);
    }
    const response = await render(c, {
      name: session.name,
      sandboxId: session.sandboxId,
      csrfToken: session.csrfToken,
      board: alerts ? await alerts(session.sandboxId) : undefined,
    });
    response.headers.set("cache-control", "no-store");
    return response;
  };
}

/** The server's time for islands that count ages up from it. */
export function serverNow(): string {
  return new Date().toISOString();
}
