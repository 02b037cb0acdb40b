/**
 * `GET /health`: 200 when the database answers within 2 s (and, with
 * QUEUE=jetstream and the workers here, the broker is connected), else 503.
 * Says which queue runs, and where there is a broker, its cluster as this
 * process's client sees it.
 */
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
    const { carrier, broker, cluster } = deps.messaging.health();
    const starting = deps.started === false;
    const ok = !starting && up && broker !== "down";
    return c.json({
      status: starting ? "starting" : ok ? "ok" : "degraded",
      database: up ? "up" : "down",
      queue: carrier,
      ...(broker ? { broker } : {}),
      ...(cluster ? { cluster } : {}),
    }, ok ? 200 : 503);
  };
}
