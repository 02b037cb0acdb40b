/**
 * What makes the console live, shared by every console island on a page:
 *
 * - ONE `EventSource` on `/api/events` per page, whatever the number of
 *   islands: a browser allows only 6 connections per host over HTTP/1.1, and
 *   one stream per island would eat them.
 * - `useLive(src, initial)`: the island's data, fetched again from its JSON
 *   twin on every `change` event. No polling loop: the server's feed says
 *   when to look, and coalesces bursts to one event per 200 ms.
 * - A clock signal that ticks once a second, so ages count up in the browser
 *   between changes without asking the server.
 */
import { type Signal, signal, useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";

/** The stream's state, for the indicator in the console's header. */
export type LiveState = "connecting" | "open" | "closed";

/** The state of the page's one event stream. */
export const liveState: Signal<LiveState> = signal("connecting");

let source: EventSource | undefined;
const listeners = new Set<() => void>();

function notify() {
  for (const listener of listeners) listener();
}

function openSource() {
  if (source) return;
  source = new EventSource("/api/events");
  source.addEventListener("hello", () => {
    liveState.value = "open";
    // The server says hello on every (re)connect, once it listens for this
    // sandbox. A change made before that (between the page's render and the
    // first hello, or while the stream was down) sent no event, so everyone
    // looks again, the first time too.
    notify();
  });
  source.addEventListener("change", notify);
  source.addEventListener("error", () => {
    // The browser reconnects by itself (the server asks for 2 s), unless the
    // answer was not a stream at all (401 after signing out): then CLOSED.
    liveState.value = source?.readyState === EventSource.CLOSED
      ? "closed"
      : "connecting";
  });
}

/**
 * Calls `listener` on every `change` of the caller's sandbox (and after a
 * reconnect). Returns the function that stops listening; the stream closes
 * when nobody listens any more.
 *
 * @example
 * ```ts
 * const stop = onChange(() => console.log("look again"));
 * ```
 */
export function onChange(listener: () => void): () => void {
  listeners.add(listener);
  openSource();
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && source) {
      source.close();
      source = undefined;
    }
  };
}

/** Browser time in ms, once a second; null until the page is hydrated. */
export const now: Signal<number | null> = signal(null);
let ticking = false;

/**
 * Starts the one-second clock (once per page) and returns the current tick.
 * Null during the server render and the first browser render, so that both
 * print the ages the server measured.
 */
export function useNow(): number | null {
  useEffect(() => {
    if (ticking) return;
    ticking = true;
    now.value = Date.now();
    setInterval(() => now.value = Date.now(), 1000);
  }, []);
  return now.value;
}

/**
 * An age the server measured at browser time `stampMs`, counted up to
 * `nowMs`. Before the clock starts it is the server's own number.
 */
export function liveAge(
  ageSeconds: number | null,
  stampMs: number,
  nowMs: number | null,
): number | null {
  if (ageSeconds === null || nowMs === null || stampMs === 0) {
    return ageSeconds;
  }
  return ageSeconds + Math.max(0, nowMs - stampMs) / 1000;
}

/**
 * When the server measured the page's ages, in browser time. The page says
 * its server time; the gap to the browser clock is the time the page took to
 * arrive, unless the two clocks disagree: a gap outside 0..30 s is taken for
 * skew and ignored, so a wrong clock never shows an age that runs ahead.
 */
function stampOf(serverNow: string | undefined): number {
  const local = Date.now();
  const server = serverNow ? Date.parse(serverNow) : NaN;
  const gap = local - server;
  return gap >= 0 && gap < 30_000 ? server : local;
}

/** What `useLive` gives an island. */
export interface Live<T> {
  /** The last answer of the JSON twin (at first, the server's render). */
  data: Signal<T>;
  /** Browser time (ms) when `data` was measured; 0 before hydration. */
  stamp: Signal<number>;
  /** Why the last refresh failed, or null. */
  error: Signal<string | null>;
  /** Fetches the JSON twin now (after an action, without waiting). */
  reload: () => Promise<void>;
}

/**
 * The island's data: `initial` from the server render, then the JSON of
 * `src` again whenever the sandbox changes. One fetch at a time; a change
 * that arrives during a fetch causes exactly one more. A 401 (the session
 * ended) goes to the sign-in page.
 *
 * @example
 * ```tsx
 * const { data } = useLive("/api/console/closure", props.initial);
 * ```
 */
export function useLive<T>(
  src: string,
  initial: T,
  serverNow?: string,
): Live<T> {
  const data = useSignal(initial);
  const stamp = useSignal(0);
  const error = useSignal<string | null>(null);
  // Not a signal: whether a fetch is out changes nothing on screen.
  const state = useRef({ running: false, again: false });

  async function reload(): Promise<void> {
    const s = state.current;
    if (s.running) {
      s.again = true;
      return;
    }
    s.running = true;
    try {
      do {
        s.again = false;
        const response = await fetch(src, {
          headers: { accept: "application/json" },
        });
        if (response.status === 401) {
          const here = location.pathname + location.search;
          location.assign(`/sign-in?next=${encodeURIComponent(here)}`);
          return;
        }
        if (!response.ok) {
          error.value = `The console answered ${response.status}.`;
          continue;
        }
        data.value = await response.json();
        stamp.value = Date.now();
        error.value = null;
      } while (s.again);
    } catch {
      error.value = "The bakery cannot be reached; showing the last answer.";
    } finally {
      s.running = false;
    }
  }

  useEffect(() => {
    stamp.value = stampOf(serverNow);
    return onChange(() => void reload());
  }, [src]);

  return { data, stamp, error, reload };
}
