/**
 * One request to a subscriber and how it is judged, for a single delivery
 * (send.ts) and for a batch (send_batch.ts) alike.
 */
import { classify, type Outcome, retryDelay } from "./classify.ts";
import type { AttemptResult, ClaimedDelivery } from "../ledger/delivery.ts";
import type { SendOptions } from "./send.ts";
import { AnswerLost } from "./dispatcher.ts";

/** One delivery's attempt, judged from the outcome of its request. */
export function judge(
  options: SendOptions,
  d: ClaimedDelivery,
  outcome: Outcome,
  startedAt: Date,
  durationMs: number,
): AttemptResult {
  const label = options.subscribers[d.subscriber]?.label ?? d.subscriber;
  const maxAttempts = d.maxAttempts ?? options.retryDelaysMs.length + 1;
  const judged = classify(
    outcome,
    label,
    options.timeoutMs,
    d.attempt,
    maxAttempts,
  );
  return {
    id: d.id,
    lease: d.lease,
    state: judged.state,
    attempt: d.attempt,
    status: outcome.kind === "answered" || outcome.kind === "lost"
      ? outcome.status
      : null,
    error: judged.error,
    delayMs: judged.state === "pending"
      ? retryDelay(options.retryDelaysMs, d.attempt)
      : 0,
    startedAt,
    durationMs: Math.round(durationMs),
  };
}

/**
 * POSTs JSON to `url` within the timeout; the outcome, and the answer's
 * text when there was one.
 */
export async function exchange(
  options: SendOptions,
  url: string,
  request: { headers: Record<string, string>; body: string },
): Promise<{ outcome: Outcome; text: string }> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<{ outcome: Outcome; text: string }>(
    (resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve({ outcome: { kind: "timeout" }, text: "" });
      }, options.timeoutMs);
    },
  );
  const sent = new Request(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...request.headers },
    body: request.body,
    signal: controller.signal,
  });
  const send = (async (): Promise<{ outcome: Outcome; text: string }> => {
    try {
      const response = await options.dispatcher.send(sent);
      const text = await response.text();
      return {
        outcome: { kind: "answered", status: response.status, reason: "" },
        text,
      };
    } catch (error) {
      const outcome: Outcome = error instanceof AnswerLost
        ? { kind: "lost", status: error.status, reason: error.message }
        : { kind: "network", message: (error as Error).message };
      return { outcome, text: "" };
    }
  })();
  try {
    return await Promise.race([send, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `text` as JSON, or the text itself when it is not JSON. */
export function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The receiver's words for an answer of `status`. A success says nothing
 * beyond its success unless its body has a `reason` (a receiver's inbox
 * gives one when it applied nothing: a copy of a message it had applied);
 * the rest of a 2xx body is the receiver's own business. A failure's words
 * are the `reason` or `error` of its body, else its text.
 */
export function reasonIn(body: unknown, status: number): string {
  const ok = status >= 200 && status < 300;
  if (body !== null && typeof body === "object") {
    const { reason, error } = body as { reason?: unknown; error?: unknown };
    const said = ok ? reason : reason ?? error;
    return typeof said === "string" ? said.slice(0, 500) : "";
  }
  return ok ? "" : String(body).trim().slice(0, 200);
}
