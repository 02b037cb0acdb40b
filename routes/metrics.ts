/**
 * `GET /metrics`: Prometheus text, across every sandbox (counts only). With
 * METRICS_TOKEN set, only a scraper that sends `Authorization: Bearer
 * <token>` gets it (Hono's bearer-auth: 401 without or with a wrong token,
 * 400 for a header that is not a bearer token).
 */
import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import type { Deps } from "../deps.ts";

/** The token check of `/metrics`, or a pass-through when none is set. */
export function metricsGuard(deps: Deps): MiddlewareHandler {
  const token = deps.config.METRICS_TOKEN;
  if (!token) return (_c, next) => next();
  return bearerAuth({
    token,
    noAuthenticationHeader: {
      message: { error: "send Authorization: Bearer <METRICS_TOKEN>" },
    },
    invalidAuthenticationHeader: {
      message: { error: "Authorization must be Bearer <METRICS_TOKEN>" },
    },
    invalidToken: { message: { error: "wrong metrics token" } },
  });
}

export function metricsRoute(deps: Deps) {
  return async (c: Context) =>
    c.body(await deps.metrics.render(), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
}
