/**
 * The storefront's routes in one place: static files, the menu page, the
 * checkout page and the menu API. `createApp` calls `registerStorefront`.
 */
import type { Context, Hono } from "hono";
import { serveStatic } from "hono/deno";
import { fileURLToPath } from "node:url";
import type { Deps } from "../deps.ts";
import { checkoutPage } from "./checkout.tsx";
import { menuPage } from "./index.tsx";
import { menuApi } from "./api/menu.ts";

// Unversioned files (style.css, icons) may be reused for 5 minutes, so a
// change shows up soon; a URL that carries ?v=<content hash> never changes
// content, so a year (the most browsers honour) and immutable.
const SHORT_CACHE = "public, max-age=300";
const LONG_CACHE = "public, max-age=31536000, immutable";

/** Where `static/` lives: beside `routes/`, whatever the working directory. */
const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * The CSRF token that a session middleware put on the context, if any. The
 * pages print it in a meta tag; without one, islands rely on `Origin`.
 */
function csrfTokenOf(c: Context): string | undefined {
  const token: unknown = c.get("csrfToken");
  return typeof token === "string" && token ? token : undefined;
}

/**
 * Registers `/static/*`, `/`, `/checkout` and `GET /api/menu` on `app`.
 *
 * @example
 * ```ts
 * const app = new Hono();
 * registerStorefront(app, deps);
 * ```
 */
export function registerStorefront(app: Hono, _deps: Deps): void {
  app.use(
    "/static/*",
    serveStatic({
      root: PROJECT_ROOT,
      onFound: (_path, c) => {
        c.header("Cache-Control", c.req.query("v") ? LONG_CACHE : SHORT_CACHE);
        c.header("X-Content-Type-Options", "nosniff");
      },
    }),
  );
  app.get("/", (c) => menuPage({ csrfToken: csrfTokenOf(c) }));
  app.get("/checkout", (c) => checkoutPage({ csrfToken: csrfTokenOf(c) }));
  app.get("/api/menu", menuApi);
}
