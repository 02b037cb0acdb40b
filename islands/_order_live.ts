/**
 * Keeps an order page current. It listens to `/api/orders/:id/events`
 * (server-sent events; the server sends `change` when something in the
 * sandbox moved) and re-reads `GET /api/orders/:id` on each change. Reads
 * never overlap: changes that arrive during a read cause one more read, not
 * one each, since a paid order fans out into a burst of six deliveries.
 */
import type { OrderView } from "../services/timeline.ts";

/** What the page says about its freshness. */
export type LiveStatus =
  /** Opening the event stream. */
  | "connecting"
  /** The event stream is open: changes show as they happen. */
  | "live"
  /** The stream dropped; the browser is opening it again. */
  | "reconnecting"
  /** Fallback: no event stream, reading every 2 s. */
  | "polling"
  /** Fallback finished: the order is settled, reading has stopped. */
  | "idle"
  /** The order is no longer readable (signed out, or gone): 401 or 404. */
  | "gone";

/** What `watchOrder` is told and whom it tells. */
export interface WatchOptions {
  orderId: string;
  onView(view: OrderView): void;
  onStatus(status: LiveStatus): void;
  /** True when nothing will change without someone acting; ends polling. */
  settled(): boolean;
}

/** A running watch: read now, or stop everything. */
export interface Watch {
  refresh(): Promise<void>;
  stop(): void;
}

/** The fallback's interval: short enough to see a payment land. */
const POLL_MS = 2000;

/**
 * Starts watching an order; call `stop()` when the island goes away.
 *
 * @example
 * ```ts
 * const watch = watchOrder({ orderId, onView, onStatus, settled });
 * await watch.refresh(); // e.g. after cancelling
 * watch.stop();
 * ```
 */
export function watchOrder(options: WatchOptions): Watch {
  const path = `/api/orders/${encodeURIComponent(options.orderId)}`;
  let stopped = false;
  let reading: Promise<void> | undefined;
  let readAgain = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let source: EventSource | undefined;

  function stop() {
    stopped = true;
    source?.close();
    clearTimeout(timer);
  }

  async function readLoop() {
    do {
      readAgain = false;
      try {
        const response = await fetch(path, {
          headers: { accept: "application/json" },
        });
        if (stopped) return;
        if (response.status === 401 || response.status === 404) {
          await response.body?.cancel();
          options.onStatus("gone");
          stop();
          return;
        }
        if (response.ok) options.onView(await response.json());
        else await response.body?.cancel();
      } catch {
        // Offline for a moment: the next change (or poll) reads again.
      }
    } while (readAgain && !stopped);
  }

  function refresh(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (reading) {
      readAgain = true;
      return reading;
    }
    reading = readLoop().finally(() => reading = undefined);
    return reading;
  }

  // --- Fallback: polling, only while the event stream is not there. -------
  // Until /events exists the stream answers 404 and closes for good; then the
  // page reads every 2 s, and only until the order is settled.
  function poll() {
    if (stopped) return;
    if (options.settled()) {
      options.onStatus("idle");
      return;
    }
    options.onStatus("polling");
    timer = setTimeout(() => refresh().then(poll), POLL_MS);
  }
  // --- End of the fallback. -----------------------------------------------

  function listen() {
    const events = new EventSource(`${path}/events`);
    source = events;
    // Read once on (re)open: changes made before the stream was open, or
    // while it was down, sent no event to this page.
    events.addEventListener("open", () => {
      options.onStatus("live");
      refresh();
    });
    events.addEventListener("change", () => refresh());
    events.addEventListener("error", () => {
      if (stopped) return;
      if (events.readyState === EventSource.CLOSED) {
        // Not a stream (404, 401, wrong type): the browser gives up on it.
        events.close();
        source = undefined;
        refresh().then(poll);
      } else {
        options.onStatus("reconnecting");
      }
    });
  }

  if (typeof EventSource === "function") listen();
  else refresh().then(poll);
  return { refresh, stop };
}
