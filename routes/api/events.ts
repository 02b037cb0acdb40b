/**
 * `GET /api/events`: server-sent events for the caller's sandbox. Each
 * `change` event says "something in your sandbox changed; look again".
 * Bursts are coalesced to at most one event per 200 ms.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { sseResponse } from "../../lib/http/sse.ts";
import { requireSession } from "./session.ts";

const COALESCE_MS = 200;

export function eventsRoute(deps: Deps) {
  return (c: Context) => {
    const { sandboxId } = requireSession(c);
    // A client that goes away cancels the body stream; `closing` ends the
    // stream when the server stops.
    return sseResponse(deps.closing, (channel) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      channel.send("hello", { sandboxId });
      const unsubscribe = deps.feed.subscribe(sandboxId, () => {
        timer ??= setTimeout(() => {
          timer = undefined;
          channel.send("change", { at: new Date().toISOString() });
        }, COALESCE_MS);
      });
      return () => {
        clearTimeout(timer);
        unsubscribe();
      };
    });
  };
}
