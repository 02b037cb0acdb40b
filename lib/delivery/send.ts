/**
 * Sending deliveries to their subscribers, on either transport: POST each
 * envelope, judge the answer (classify.ts), and log what a recorded batch
 * needs said. The deliveries of one aggregate to one subscriber go in order,
 * different ones in parallel.
 */
import {
  contextOf,
  endSpan,
  startSpan,
  tracing,
  withSpan,
} from "../trace/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { Outcome } from "./classify.ts";
import type { AttemptResult, ClaimedDelivery } from "../ledger/delivery.ts";
import { exchange, judge, parsed, reasonIn } from "./exchange.ts";
import { attemptBatch } from "./send_batch.ts";
import type { Dispatcher } from "./dispatcher.ts";

export interface Subscriber {
  url: string;
  /**
   * Where the subscriber takes a batch (send_batch.ts): one request, one
   * receiver transaction and one answer per message. Without it, one
   * request per delivery.
   */
  batchUrl?: string;
  /** Used in error text: "Billing answered 503". */
  label: string;
  /**
   * Whether the subscriber keeps each aggregate's order for a tenant: then
   * a delivery that fails while an earlier one of its aggregate is dead is
   * held behind it (state `held`) instead of retried, and goes again once
   * that one is done or refused. Unset: never.
   */
  keepsOrder?: (tenantId: string) => boolean | Promise<boolean>;
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
 * Deliveries in one batch request at most. A receiver applies a request in
 * one transaction, so its size bounds how long it takes: a claim's lane of
 * a hundred goes as ten requests in turn, each well inside the delivery
 * timeout on a loaded machine. Ten drained faster than 25 in the deliver
 * scenario (bench/HISTORY.md).
 */
export const BATCH_REQUEST_MAX = 10;

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
  // A subscriber that takes batches gets one request per tenant, with the
  // deliveries in claim order (which keeps each aggregate's order); any
  // other, one request per delivery, each aggregate's in turn.
  const keeping = await keepingOrder(options.subscribers, claimed);
  const groups = new Map<string, ClaimedDelivery[]>();
  for (const d of claimed) {
    const batched = options.subscribers[d.subscriber]?.batchUrl !== undefined;
    const key = batched
      ? `batch\u0000${d.subscriber}\u0000${d.tenantId}`
      : `${d.subscriber}\u0000${d.aggregateId}`;
    const group = groups.get(key);
    if (group) group.push(d);
    else groups.set(key, [d]);
  }
  await Promise.all([...groups].map(async ([key, group]) => {
    // `judged` reads its list when it is called: a batch may have left its
    // stragglers to a list of their own meanwhile (tests/
    // messaging_stragglers_test.ts).
    // Each attempt is a span of its message's trace (lib/trace); a
    // batch's request goes out in its first message's.
    const spans = tracing ? group.map(attemptSpan) : [];
    const end = (r: AttemptResult) => {
      if (r.state !== "done" && keeping.size > 0) {
        const d = group.find((d) => d.id === r.id);
        if (d && keeping.has(laneKey(d))) r.keepOrder = true;
      }
      const i = tracing ? group.findIndex((d) => d.id === r.id) : -1;
      endSpan(spans[i], {
        "outbox.outcome": r.state,
        ...(r.status === null ? {} : { "http.response.status_code": r.status }),
      }, r.state !== "done");
      judged(r);
    };
    if (key.startsWith("batch\u0000")) {
      // In requests of BATCH_REQUEST_MAX at most, one after the other (the
      // order stays): a request is answered within the delivery timeout,
      // however many deliveries a claim took of one lane.
      for (let i = 0; i < group.length; i += BATCH_REQUEST_MAX) {
        const part = group.slice(i, i + BATCH_REQUEST_MAX);
        const results = await withSpan(
          spans[i],
          () => attemptBatch(options, part),
        );
        for (const r of results) end(r);
      }
    } else {
      for (const [i, d] of group.entries()) {
        end(await withSpan(spans[i], () => attempt(options, d)));
      }
    }
  }));
}

const laneKey = (d: ClaimedDelivery) => `${d.subscriber}\u0000${d.tenantId}`;

/**
 * The subscriber-tenant pairs of `claimed` that keep each aggregate's
 * order, asked once per pair per batch, and only of subscribers that may.
 */
async function keepingOrder(
  subscribers: Readonly<Record<string, Subscriber>>,
  claimed: readonly ClaimedDelivery[],
): Promise<Set<string>> {
  const asked = new Map<string, ClaimedDelivery>();
  for (const d of claimed) {
    if (subscribers[d.subscriber]?.keepsOrder) asked.set(laneKey(d), d);
  }
  const keeping = new Set<string>();
  for (const [key, d] of asked) {
    if (await subscribers[d.subscriber].keepsOrder!(d.tenantId)) {
      keeping.add(key);
    }
  }
  return keeping;
}

/** A delivery attempt's span, in the trace of the write that made it. */
function attemptSpan(d: ClaimedDelivery) {
  if (!tracing) return undefined;
  return startSpan(`deliver ${d.subscriber}`, {
    parent: contextOf(d.envelope.traceparent),
    attributes: {
      "messaging.message.id": d.messageId,
      "messaging.destination.name": d.subscriber,
      "outbox.event_type": d.type,
      "outbox.attempt": d.attempt,
    },
  });
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
  return judge(options, d, outcome, startedAt, performance.now() - t0);
}

async function post(
  options: SendOptions,
  subscriber: Subscriber,
  d: ClaimedDelivery,
): Promise<Outcome> {
  const { outcome, text } = await exchange(options, subscriber.url, {
    headers: {
      "x-message-id": d.messageId,
      "x-delivery-attempt": String(d.attempt),
    },
    body: JSON.stringify(d.envelope),
  });
  if (outcome.kind !== "answered") return outcome;
  return { ...outcome, reason: reasonIn(parsed(text), outcome.status) };
}
