/**
 * `GET /api/events`: server-sent events for the caller's sandbox. Each
 * `change` event says "something in your sandbox changed; look again".
 * Bursts are coalesced to at most one event per 200 ms. A session may hold
 * `STREAMS_PER_SESSION` streams at once; its streams end when it ends
 * (here, or within `STREAM_RECHECK_MS` when it ends elsewhere).
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { sseResponse } from "../../kit/http/sse.ts";
import type { StreamCap } from "../../kit/http/stream_cap.ts";
import { requireSession } from "./session.ts";

const COALESCE_MS = 200;

/**
 * Open streams one session may hold: a page opens one, and eight tabs of
 * the console and the storefront are more than a person keeps open (a
 * browser over HTTP/1.1 holds six connections per site in all).
 */
export const STREAMS_PER_SESSION = 8;

/**
 * How often the sessions of open streams are looked up, so that a session
 * ended where this process does not see it (another process, the daily
 * wipe) or idle too long ends its streams within this time.
 */
export const STREAM_RECHECK_MS = 5_000;

export function eventsRoute(deps: Deps, streams: StreamCap) {
  return (c: Context) => {
    const session = requireSession(c);
    const { sandboxId } = session;
    const slot = streams.open(session.id);
    if (!slot) {
      throw new HttpError(
        429,
        `too many open event streams (${STREAMS_PER_SESSION} a session); close a tab`,
        [],
        { "Retry-After": "5" },
      );
    }
    // A client that goes away cancels the body stream; `closing` ends the
    // stream when the server stops, the slot's signal when the session ends.
    const signal = AbortSignal.any([deps.closing, slot.signal]);
    return sseResponse(signal, (channel) => {
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
        slot.release();
      };
    });
  };
}
