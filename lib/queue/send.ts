/**
 * Sending deliveries to their subscribers, on either transport: POST each
 * envelope, judge the answer (classify.ts), and log what a recorded batch
 * needs said. The deliveries of one aggregate to one subscriber go in order,
 * different ones in parallel.
 */
import type { Logger } from "../log/mod.ts";
import { classify, type Outcome, retryDelay } from "./classify.ts";
import type { AttemptResult, ClaimedDelivery } from "./delivery.ts";
import { AnswerLost, type Dispatcher } from "./transport.ts";

export interface Subscriber {
  url: string;
  /** Used in error text: "Kitchen answered 503". */
  label: string;
}

/** How long a consumer's claim holds a delivery. */
export function consumerLeaseMs(
  options: { leaseMs?: number; timeoutMs: number },
): number {
  return options.leaseMs ?? Math.max(10_000, options.timeoutMs * 4);
}

/** What sending deliveries needs, on either transport. */
export interface SendOptions {
  /** The lease owner this process writes (in logs: whose lease was lost). */
  owner: string;
  /** Carries the requests (a Dispatcher, or a decorator of one). */
  dispatcher: Pick<Dispatcher, "send">;
  subscribers: Readonly<Record<string, Subscriber>>;
  /** Delays before each retry; their count is the number of retries. */
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  log: Logger;
  /** Seconds from a message's creation to its delivery, per done delivery. */
  observeDelivered?: (seconds: number, subscriber: string) => void;
}

/** Sends every delivery of `claimed`; their results, in any order. */
export async function sendAll(
  options: SendOptions,
  claimed: ClaimedDelivery[],
): Promise<AttemptResult[]> {
  const results: AttemptResult[] = [];
  await send(options, claimed, (r) => results.push(r));
  return results;
}

/**
 * Sends `claimed`, calling `judged` with each result as it comes: the
 * deliveries of one aggregate to one subscriber in order (OrderPlaced
 * before OrderPaid), different ones in parallel.
 */
export async function send(
  options: SendOptions,
  claimed: ClaimedDelivery[],
  judged: (result: AttemptResult) => void,
): Promise<void> {
  const groups = new Map<string, ClaimedDelivery[]>();
  for (const d of claimed) {
    const key = `${d.subscriber}\u0000${d.aggregateId}`;
    const group = groups.get(key);
    if (group) group.push(d);
    else groups.set(key, [d]);
  }
  await Promise.all([...groups.values()].map(async (group) => {
    // `judged` reads its list when it is called: a batch may have left its
    // stragglers to a list of their own meanwhile (tests/
    // messaging_stragglers_test.ts).
    for (const d of group) judged(await attempt(options, d));
  }));
}

/** Logs what a recorded batch needs said, and observes the delivered. */
export function recorded(
  options: SendOptions,
  claimed: ClaimedDelivery[],
  results: AttemptResult[],
  finished: number,
) {
  if (finished < results.length) {
    options.log.warn("lease_lost", {
      owner: options.owner,
      lost: results.length - finished,
    });
  }
  for (const r of results) {
    if (r.state === "dead") {
      options.log.warn("dead_letter", { delivery: r.id, error: r.error });
    }
  }
  if (options.observeDelivered) {
    const now = Date.now();
    const done = new Set(
      results.filter((r) => r.state === "done").map((r) => r.id),
    );
    for (const d of claimed) {
      if (!done.has(d.id)) continue;
      options.observeDelivered(
        (now - Date.parse(d.envelope.occurredAt)) / 1000,
        d.subscriber,
      );
    }
  }
}

async function attempt(
  options: SendOptions,
  d: ClaimedDelivery,
): Promise<AttemptResult> {
  const subscriber = options.subscribers[d.subscriber];
  const maxAttempts = d.maxAttempts ?? options.retryDelaysMs.length + 1;
  const startedAt = new Date();
  const t0 = performance.now();
  let outcome: Outcome;
  if (!subscriber) {
    outcome = {
      kind: "network",
      message: `no subscriber named ${d.subscriber}`,
    };
  } else {
    outcome = await post(options, subscriber, d);
  }
  const label = subscriber?.label ?? d.subscriber;
  const judged = classify(
    outcome,
    label,
    options.timeoutMs,
    d.attempt,
    maxAttempts,
  );
  return {
    id: d.id,
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
    durationMs: Math.round(performance.now() - t0),
  };
}

async function post(
  options: SendOptions,
  subscriber: Subscriber,
  d: ClaimedDelivery,
): Promise<Outcome> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ kind: "timeout" });
    }, options.timeoutMs);
  });
  const request = new Request(subscriber.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-message-id": d.messageId,
      "x-delivery-attempt": String(d.attempt),
    },
    body: JSON.stringify(d.envelope),
    signal: controller.signal,
  });
  const send = (async (): Promise<Outcome> => {
    try {
      const response = await options.dispatcher.send(request);
      const text = await response.text();
      return {
        kind: "answered",
        status: response.status,
        reason: response.ok ? saidOf(text) : reasonOf(text),
      };
    } catch (error) {
      if (error instanceof AnswerLost) {
        return { kind: "lost", status: error.status, reason: error.message };
      }
      return { kind: "network", message: (error as Error).message };
    }
  })();
  try {
    return await Promise.race([send, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a success says beyond its success: the `reason` of a JSON body
 * (a receiver's inbox gives one when it applied nothing: a copy of a
 * message it had applied), else nothing. The rest of a 2xx body is the
 * receiver's own business.
 */
function saidOf(text: string): string {
  try {
    const reason = JSON.parse(text)?.reason;
    if (typeof reason === "string") return reason.slice(0, 500);
  } catch {
    // not JSON: nothing said
  }
  return "";
}

/** The receiver's words: `reason` or `error` of a JSON body, else the text. */
function reasonOf(text: string): string {
  try {
    const body = JSON.parse(text);
    const reason = body?.reason ?? body?.error;
    if (typeof reason === "string") return reason.slice(0, 500);
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 200);
}
