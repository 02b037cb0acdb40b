/** `GET /metrics`: Prometheus text, across every sandbox (counts only). */
import type { Context } from "hono";
import type { Deps } from "../deps.ts";

export function metricsRoute(deps: Deps) {
  return async (c: Context) =>
    c.body(await deps.metrics.render(), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
}
