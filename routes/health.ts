/** `GET /health`: 200 when the database answers within 2 s, else 503. */
import type { Context } from "hono";
import type { Deps } from "../deps.ts";
import { ping } from "../lib/db/connect.ts";

const TIMEOUT_MS = 2000;

export function health(deps: Deps) {
  return async (c: Context) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const up = await Promise.race([
      ping(deps.sql),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    return up
      ? c.json({ status: "ok", database: "up" })
      : c.json({ status: "degraded", database: "down" }, 503);
  };
}
