/**
 * `GET /api/events`: server-sent events for the caller's sandbox. Each
 * `change` event says "something in your sandbox changed; look again".
 * Bursts are coalesced to at most one event per 200 ms. A session may hold
 * `STREAMS_PER_SESSION` streams at once, and a client address
 * `STREAMS_PER_ADDRESS` (new sessions are cheap, an address is not); past
 * either, a 429 with Retry-After. A session's streams end when it ends
 * (here, or within `STREAM_RECHECK_MS` when it ends elsewhere).
 *
 * `GET /api/orders/:orderId/events` is the same stream for an order's
 * page; it opens only for an order of the caller's sandbox (404 otherwise),
 * as `GET /api/orders/:orderId` does.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { sseResponse } from "../../kit/http/sse.ts";
import { clientAddress } from "../../kit/http/rate_limit.ts";
import { StreamCap } from "../../kit/http/stream_cap.ts";
import { orderExists } from "../../services/timeline.ts";
import { orderIdParam } from "./orders.ts";
import { requireSession } from "./session.ts";

const COALESCE_MS = 200;

/**
 * Open streams one session may hold: a page opens one, and eight tabs of
 * the console and the storefront are more than a person keeps open (a
 * browser over HTTP/1.1 holds six connections per site in all).
 */
export const STREAMS_PER_SESSION = 8;

/**
 * Open streams one client address may hold, whatever its sessions: two
 * sessions' full share, such as two people behind one home router. Without
 * it, each new session (one request) brought eight more.
 */
export const STREAMS_PER_ADDRESS = 16;

/**
 * How often the sessions of open streams are looked up, so that a session
 * ended where this process does not see it (another process, the daily
 * wipe) or idle too long ends its streams within this time.
 */
export const STREAM_RECHECK_MS = 5_000;

export function eventsRoute(deps: Deps, streams: StreamCap) {
  // Behind a proxy (PUBLIC_URL) the client's address is the one the proxy
  // forwards, as for the rate limits (app.tsx).
  const trustProxy = deps.config.PUBLIC_URL !== undefined;
  const addresses = new StreamCap(STREAMS_PER_ADDRESS);
  return async (c: Context) => {
    const session = requireSession(c);
    const { sandboxId } = session;
    if (c.req.param("orderId") !== undefined) {
      const orderId = orderIdParam(c);
      if (!await orderExists(deps.sql, sandboxId, orderId)) {
        throw new HttpError(404, `no order ${orderId}`);
      }
    }
    const bySession = streams.open(session.id);
    if (!bySession) {
      throw tooMany(`${STREAMS_PER_SESSION} a session`);
    }
    const byAddress = addresses.open(clientAddress(c, trustProxy));
    if (!byAddress) {
      bySession.release();
      throw tooMany(`${STREAMS_PER_ADDRESS} an address`);
    }
    const slot = {
      signal: bySession.signal,
      release: () => {
        bySession.release();
        byAddress.release();
      },
    };
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

/** A 429 for one stream too many; a closed tab frees a place at once. */
function tooMany(cap: string): HttpError {
  return new HttpError(
    429,
    `too many open event streams (${cap}); close a tab`,
    [],
    { "Retry-After": "5" },
  );
}
