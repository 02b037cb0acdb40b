/**
 * The web app: middleware, routes and error handling, as one Hono app. Routes
 * are thin: parse, call a service, render.
 */
import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Deps } from "./deps.ts";
import { HttpError } from "./kit/http/errors.ts";
import { ConnectionLost } from "./lib/db/service.ts";
import { isConnectionError } from "./lib/db/reserved.ts";
import { recordClosedRefusal, TenantClosed } from "./lib/db/closed.ts";
import { html } from "./kit/http/render.ts";
import { isHttps, sessionMiddleware } from "./kit/http/session_middleware.ts";
import { hostGuard } from "./kit/http/csrf.ts";
import { bodyLimits } from "./kit/http/body_limit.ts";
import { clientAddress, rateLimit } from "./kit/http/rate_limit.ts";
import { StreamCap } from "./kit/http/stream_cap.ts";
import { Layout } from "./components/layout.tsx";
import { sandboxClosedMessage } from "./services/sandboxes.ts";
import { health } from "./routes/health.ts";
import { registerStorefront } from "./routes/storefront.ts";
import { registerOrderPages } from "./routes/orders/mod.ts";
import { registerConsolePages } from "./routes/console/mod.ts";
import { sessionRoutes } from "./routes/api/session.ts";
import { orderRoutes } from "./routes/api/orders.ts";
import { stripeWebhook, WEBHOOK_MAX_BODY } from "./routes/webhooks/stripe.ts";
import { consoleRoutes } from "./routes/api/console.ts";
import { checkoutEventRoutes } from "./routes/api/checkout_events.ts";
import { alertRoutes } from "./routes/api/alerts.ts";
import {
  eventsRoute,
  STREAM_RECHECK_MS,
  STREAMS_PER_SESSION,
} from "./routes/api/events.ts";
import { metricsGuard, metricsRoute } from "./routes/metrics.ts";
import { labRoutes } from "./routes/api/labs.ts";
import { registerLabPages } from "./routes/labs/mod.ts";
import { howItWorksPage } from "./routes/how_it_works.tsx";
import { howItWorksRoutes } from "./routes/api/how_it_works.ts";
import { registerApiDocs } from "./routes/api/docs.ts";

/**
 * Content-Security-Policy of every response: scripts and styles only from
 * this site (the islands bundle and style.css; no inline script runs, the
 * islands' props are inert JSON), no framing, forms only to this site.
 */
export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The most a request body may be, by route: a form (sign-in, sign-out) is a
 * few fields, an order or a console action a few KiB of JSON; the Stripe
 * webhook has its own limit. Checked before any body is read.
 */
function bodyLimitOf(c: Context): number {
  if (c.req.path === "/webhooks/stripe") return WEBHOOK_MAX_BODY;
  return FORM_TYPE.test(c.req.header("content-type") ?? "")
    ? 16 * 1024
    : 64 * 1024;
}

const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)/i;

/**
 * Which rate-limit count a request belongs to: the writes a person makes by
 * clicking (signing in, ordering, paying, console actions). Reading, pages,
 * event streams and the Stripe webhook (signed, and sent by Stripe in
 * bursts) are not limited.
 */
function rateGroupOf(c: Context): string | undefined {
  const { method, path } = c.req;
  if (method === "GET" || method === "HEAD") return undefined;
  if (path === "/api/session" || path === "/sign-in") {
    return method === "POST" ? "session" : undefined;
  }
  if (path === "/api/orders" || /^\/api\/orders\/[^/]+\/cancel$/.test(path)) {
    return "orders";
  }
  if (/^\/api\/orders\/[^/]+\/pay$/.test(path)) return "payments";
  if (path.startsWith("/api/console/")) return "console";
  // A lab run takes about a second; the labs' gate (services/labs/lock.ts)
  // also keeps each sandbox to one run at a time.
  if (path.startsWith("/api/labs/") || path.startsWith("/labs/")) return "labs";
  return undefined;
}

/** HSTS for a site served over https: a year, the most browsers keep. */
const HSTS = "max-age=31536000";

/** Paths that need no session lookup: files and probes. */
const STATELESS = /^\/(static\/|health$|metrics$)/;

export function createApp(deps: Deps): Hono {
  const app = new Hono();
  const siteOrigin = deps.config.PUBLIC_URL
    ? new URL(deps.config.PUBLIC_URL).origin
    : undefined;

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    deps.log.debug("http_request", {
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round(performance.now() - started),
    });
    c.header("Content-Security-Policy", CSP);
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
    if (isHttps(c, siteOrigin)) c.header("Strict-Transport-Security", HSTS);
  });

  // Before the session middleware, which parses forms for their CSRF field.
  app.use("*", bodyLimits(bodyLimitOf));

  app.get("/health", health(deps));

  // Without PUBLIC_URL the site's origin is whatever Host says, so a
  // rebound name would pass the Origin check: only loopback and
  // ALLOWED_HOSTS may change state (kit/http/csrf.ts).
  const webhooks = (path: string) => path.startsWith("/webhooks/");
  app.use(
    "*",
    hostGuard({
      siteOrigin,
      allowedHosts: deps.config.ALLOWED_HOSTS,
      exempt: webhooks,
    }),
  );

  const sessions = sessionMiddleware({
    store: deps.sessions,
    // Verified by its Stripe signature instead.
    exempt: webhooks,
    siteOrigin,
  });
  app.use(
    "*",
    (c, next) => STATELESS.test(c.req.path) ? next() : sessions(c, next),
  );

  // After the session is known: a request counts against its session and
  // its address. Behind a proxy (PUBLIC_URL) every connection comes from the
  // proxy, so the address is the one the proxy puts in X-Forwarded-For.
  const trustProxy = siteOrigin !== undefined;
  app.use(
    "*",
    rateLimit({
      perMinute: deps.config.RATE_LIMIT_PER_MINUTE,
      groupOf: rateGroupOf,
      keysOf: (c) => {
        const session = c.get("session");
        const address = `address ${clientAddress(c, trustProxy)}`;
        return session ? [`session ${session.id}`, address] : [address];
      },
    }),
  );

  // Signing out (or in, which rotates the session) ends its event streams;
  // so does a session ended elsewhere (another process, the daily wipe) or
  // idle too long, found by the recheck.
  const streams = new StreamCap(STREAMS_PER_SESSION, {
    everyMs: STREAM_RECHECK_MS,
    live: (ids) => deps.sessions.live(ids),
  });
  deps.sessions.onEnd((session) => streams.end(session.id));

  registerStorefront(app, deps);
  registerOrderPages(app, deps);
  registerConsolePages(app, deps);
  registerLabPages(app, deps);

  const session = sessionRoutes(deps);
  app.post("/api/session", session.create);
  app.get("/api/session", session.read);
  app.delete("/api/session", session.remove);

  const orders = orderRoutes(deps);
  app.post("/api/orders", orders.place);
  app.get("/api/orders/:orderId", orders.read);
  app.post("/api/orders/:orderId/pay", orders.pay);
  app.post("/api/orders/:orderId/cancel", orders.cancel);

  app.post("/webhooks/stripe", stripeWebhook(deps));

  app.get("/metrics", metricsGuard(deps), metricsRoute(deps));
  const events = eventsRoute(deps, streams);
  app.get("/api/events", events);
  app.get("/api/orders/:orderId/events", events);

  const api = consoleRoutes(deps);
  app.get("/api/console/overview", api.overview);
  app.get("/api/console/outbox", api.outbox);
  app.post("/api/console/outbox/release", api.releaseParked);
  app.get("/api/console/deliveries", api.deliveries);
  app.get("/api/console/deliveries/:id", api.delivery);
  app.get("/api/console/dead-letters", api.deadLetters);
  app.get("/api/console/failure-groups", api.failureGroups);
  app.post("/api/console/dead-letters/redrive", api.redriveMany);
  app.post("/api/console/dead-letters/refuse", api.refuseMany);
  app.post("/api/console/dead-letters/:id/redrive", api.redriveOne);
  app.post("/api/console/dead-letters/:id/refuse", api.refuseOne);
  app.post("/api/console/dead-letters/:id/supersede", api.supersede);
  app.get("/api/console/redrive-outcome", api.redriveOutcome);
  app.get("/api/console/jobs/:jobId", api.job);
  app.post("/api/console/jobs/:jobId/cancel", api.cancelJob);
  app.get("/api/console/actions", api.actions);
  app.get("/api/console/search", api.search);
  app.get("/api/console/closure", api.closure);
  app.get("/api/console/closure/rows", api.closureRows);
  app.get("/api/console/faults", api.faults);
  app.put("/api/console/faults", api.setFaults);
  app.get("/api/console/receivers/:name", api.receiverPause);
  app.put("/api/console/receivers/:name", api.setReceiverPause);
  app.get("/api/console/alerts", api.alerts);
  app.get("/api/console/receivers", api.receivers);
  app.get("/api/console/workers", api.workers);
  app.get("/api/console/order-violations", api.orderViolations);
  app.get("/api/kitchen/board", api.board);
  const alerts = alertRoutes(deps);
  app.get("/api/console/alert-board", alerts.board);
  app.post("/api/console/alerts/:id/acknowledge", alerts.acknowledge);
  const checkoutEvents = checkoutEventRoutes(deps);
  app.get("/api/console/checkout-events", checkoutEvents.list);
  app.post(
    "/api/console/checkout-events/:id/send-again",
    checkoutEvents.sendAgain,
  );

  const labs = labRoutes(deps);
  app.get("/api/labs/ledger", labs.ledger);
  app.post("/api/labs/ledger/:scenario", labs.runLedger);
  app.get("/api/labs/queue", labs.queue);
  app.post("/api/labs/queue", labs.runQueue);
  app.get("/how-it-works", (c) => howItWorksPage(c, deps));
  const how = howItWorksRoutes(deps);
  app.get("/api/how-it-works", how.page);
  app.get("/api/how-it-works/costs", how.costs);
  app.get("/api/how-it-works/try-it", how.tryIt);
  registerApiDocs(app);

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

  app.onError(async (error, c) => {
    // Hono's own middleware (bearer-auth) answers with its response.
    if (error instanceof HTTPException) return error.getResponse();
    if (error instanceof TenantClosed) {
      // A request of a sandbox whose wipe began while it ran: nothing of it
      // was applied, and a row says so.
      const message = sandboxClosedMessage(error);
      await recordClosedRefusal(deps.sql, {
        tenantId: error.tenantId,
        refusedBy: error.service,
        what: "request",
        key: `${c.req.method} ${c.req.path}`,
        reason: message,
      });
      return c.json({ error: message }, 410);
    }
    if (error instanceof HttpError) {
      const wantsHtml = !c.req.path.startsWith("/api/") &&
        (c.req.header("accept") ?? "").includes("text/html");
      const response = wantsHtml
        ? html(
          <Layout title={`Error ${error.status}`}>
            <h1>
              {error.status === 401 ? "Please sign in" : "That did not work"}
            </h1>
            <p>{error.message}</p>
          </Layout>,
          error.status,
        )
        : c.json({ error: error.message, issues: error.issues }, error.status);
      for (const [name, value] of Object.entries(error.headers)) {
        response.headers.set(name, value);
      }
      return response;
    }
    if (error instanceof ConnectionLost || isConnectionError(error)) {
      // The database is restarting or out of reach: a moment's trouble, not
      // a bug. What was not committed is gone; a command sent again with the
      // same idempotency key cannot apply twice.
      deps.log.warn("database_unavailable", {
        method: c.req.method,
        path: c.req.path,
        error,
      });
      c.header("Retry-After", "1");
      return c.json({
        error: "the database is not answering right now; try again in a moment",
      }, 503);
    }
    deps.log.error("http_error", {
      method: c.req.method,
      path: c.req.path,
      error,
      stack: (error as Error).stack,
    });
    return c.json({ error: "internal error" }, 500);
  });

  return app;
}
