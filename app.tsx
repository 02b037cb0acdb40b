/**
 * The web app: middleware, routes and error handling, as one Hono app. Routes
 * are thin: parse, call a service, render.
 */
import { Hono } from "hono";
import type { Deps } from "./deps.ts";
import { HttpError } from "./lib/http/errors.ts";
import { html } from "./lib/http/render.ts";
import { Layout } from "./components/layout.tsx";
import { health } from "./routes/health.ts";

export function createApp(deps: Deps): Hono {
  const app = new Hono();

  app.get("/health", health(deps));

  app.notFound((c) => {
    if (c.req.path.startsWith("/api/") || c.req.path === "/api") {
      return c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404);
    }
    return html(
      <Layout title="Not found">
        <h1>Not found</h1>
        <p>
          There is nothing at <code>{c.req.path}</code>.{" "}
          <a href="/">Back to the bakery</a>.
        </p>
      </Layout>,
      404,
    );
  });

  app.onError((error, c) => {
    if (error instanceof HttpError) {
      return c.json(
        { error: error.message, issues: error.issues },
        error.status,
      );
    }
    deps.log.error("http_error", {
      method: c.req.method,
      path: c.req.path,
      error,
    });
    return c.json({ error: "internal error" }, 500);
  });

  return app;
}
