/**
 * Server-sent events: a Response whose body stays open and carries named
 * events, with a comment line every 15 s so that proxies keep it open. The
 * stream ends when the client goes away (the runtime cancels the body) or
 * when `signal` aborts (the server stops).
 */

export interface SseChannel {
  /** Sends one event; `data` is JSON-encoded. */
  send(event: string, data: unknown): void;
}

export function sseResponse(
  signal: AbortSignal,
  start: (channel: SseChannel) => () => void,
): Response {
  const encoder = new TextEncoder();
  let stop = () => {};
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const write = (text: string) => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          close();
        }
      };
      const close = () => {
        if (!open) return;
        open = false;
        clearInterval(heartbeat);
        stop();
        try {
          controller.close();
        } catch {
          // already closed by the client
        }
      };
      stop = start({
        send: (event, data) =>
          write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
      });
      write("retry: 2000\n\n");
      heartbeat = setInterval(() => write(": keep-alive\n\n"), 15_000);
      signal.addEventListener("abort", close, { once: true });
    },
    cancel() {
      clearInterval(heartbeat);
      stop();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}
