/**
 * The consumer: claim due deliveries, POST each envelope to its subscriber,
 * classify the answer, and record the batch. At least once delivery; the
 * receivers' inboxes make a repeat harmless.
 *
 * | answer                          | what happens                         |
 * | ------------------------------- | ------------------------------------ |
 * | 2xx                             | done                                 |
 * | 409, 5xx, timeout, network      | retry after the next delay; dead     |
 * |                                 | after the last one                   |
 * | 422                             | refused by the receiver: dead at once|
 * | other 4xx (400, 404, ...)       | cannot succeed as sent: dead at once |
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import { type FaultReader, isOn } from "../faults/mod.ts";
import type { Dispatcher } from "./transport.ts";
import {
  type AttemptResult,
  claimBatch,
  type ClaimedDelivery,
  type ClaimOptions,
  finishAndClaim,
  finishDeliveries,
} from "./deliveries_sql.ts";
import type { FairShare } from "./fair_share.ts";
import type { TickResult } from "../wake/loop.ts";

/** Fault switches the consumers obey. */
export const CONSUMER_FAULTS = {
  /** The receiver commits, then the consumer sees a failure. */
  lostAcks: "lostAcks",
  /** Every delivery is sent twice in a row. */
  duplicateDeliveries: "duplicateDeliveries",
} as const;

export interface Subscriber {
  url: string;
  /** Used in error text: "Kitchen answered 503". */
  label: string;
}

export interface ConsumerOptions {
  sql: Sql;
  owner: string;
  dispatcher: Dispatcher;
  /**
   * The subscribers this consumer serves: it claims deliveries to these
   * only, so that consumers of different subscribers can share the queue.
   */
  subscribers: Readonly<Record<string, Subscriber>>;
  /** Delays before each retry; their count is the number of retries. */
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  log: Logger;
  faults: FaultReader;
  /** Deliveries per claim; 10 (the default) keeps a batch's lock time short. */
  batchSize?: number;
  /** Must outlast the timeout; default 4 x timeout, at least 10 s. */
  leaseMs?: number;
  /** Seconds from a message's creation to its delivery, per done delivery. */
  observeDelivered?: (seconds: number, subscriber: string) => void;
  /**
   * Called just before the claim goes to the server: a wake-up hint heard
   * before this moment is answered by this claim (lib/workers/mod.ts).
   */
  onClaimSent?: () => void;
  /** Called when a claim came back full: there is probably more to do. */
  onFullBatch?: () => void;
  /**
   * Full batches one tick may take in a row, each claimed in the
   * transaction that records the one before (default 5).
   */
  batchesPerTick?: number;
  /** The process's share between sandboxes (lib/queue/fair_share.ts). */
  share: FairShare;
  /**
   * Called once deliveries left running on their own (stragglers) were
   * recorded: their sandboxes' rows may be claimed again, and live views
   * may show them.
   */
  onLateFinished?: (sandboxIds: string[]) => void;
  /**
   * Deliveries a move of this process stored already leased to `owner`
   * (lib/queue/publish.ts `Handoff`): when there are some, the tick sends
   * them instead of claiming.
   */
  handed?: () => ClaimedDelivery[] | undefined;
}

/** Deliveries per claim, unless a consumer says otherwise. */
export const CONSUMER_BATCH_SIZE = 10;

/** How long a consumer's claim holds a delivery. */
export function consumerLeaseMs(
  options: { leaseMs?: number; timeoutMs: number },
): number {
  return options.leaseMs ?? Math.max(10_000, options.timeoutMs * 4);
}

/** The answer of one POST, before it is judged. */
export type Outcome =
  | { kind: "answered"; status: number; reason: string }
  | { kind: "timeout" }
  | { kind: "network"; message: string };

/**
 * Judges an answer: done, retry or dead, with the error in words. Pure, so
 * the table above is tested directly.
 */
export function classify(
  outcome: Outcome,
  label: string,
  timeoutMs: number,
  attempt: number,
  maxAttempts: number,
): { state: "done" | "pending" | "dead"; error: string | null } {
  if (
    outcome.kind === "answered" && outcome.status >= 200 && outcome.status < 300
  ) {
    return { state: "done", error: null };
  }
  let error: string;
  let retryable: boolean;
  if (outcome.kind === "timeout") {
    error = `${label} timed out after ${timeoutMs} ms`;
    retryable = true;
  } else if (outcome.kind === "network") {
    error = `${label} could not be reached: ${outcome.message}`;
    retryable = true;
  } else {
    const { status, reason } = outcome;
    error = `${label} answered ${status}` + (reason ? `: ${reason}` : "");
    retryable = status === 409 || status === 429 || status >= 500;
  }
  const state = retryable && attempt < maxAttempts ? "pending" : "dead";
  return { state, error };
}

/** The delay before retry number `attempt` (1-based), with up to 10 % jitter. */
export function retryDelay(delays: readonly number[], attempt: number): number {
  const base = delays[Math.min(attempt, delays.length) - 1] ?? 0;
  return Math.round(base * (1 + Math.random() * 0.1));
}

/**
 * One claim-deliver-record round; after a full batch that finished whole,
 * the next batch is claimed in the same transaction that records this one,
 * up to `batchesPerTick` batches. A batch whose slowest deliveries are
 * still running after the share's `stragglerMs` is recorded without them:
 * they finish on their own (see lib/queue/fair_share.ts).
 */
export async function consumeOnce(
  options: ConsumerOptions,
): Promise<TickResult> {
  const { share } = options;
  const batchSize = options.batchSize ?? CONSUMER_BATCH_SIZE;
  const leaseMs = consumerLeaseMs(options);
  const rounds = options.batchesPerTick ?? 5;
  const subscribers = Object.keys(options.subscribers);
  const claim = (): ClaimOptions => ({
    limit: batchSize,
    leaseMs,
    subscribers,
    round: {
      after: share.after,
      perSandbox: share.perSandbox,
      perLane: share.perLane,
      held: share.held(),
    },
    onSent: options.onClaimSent,
  });
  const handed = options.handed?.();
  let batch = handed
    ? { claimed: handed, nextDueAt: null }
    : await claimBatch(options.sql, options.owner, claim());
  const touched = new Set<string>();
  // Wake for the earliest retry a batch scheduled: waiting for the poll
  // would turn a 1 s retry into a 5 s one (POLL_INTERVAL_MS).
  let retryAt = Infinity;
  for (let round = 1; batch.claimed.length > 0; round++) {
    if (batch.after !== undefined) share.after = batch.after;
    const claimed = batch.claimed;
    share.hold(claimed);
    // A batch cut short by the share is as good as full: there is more to
    // claim once it is done, and waiting for a wake-up or the poll left a
    // slow sandbox's other receivers seconds behind.
    const full = claimed.length === batchSize ||
      claimed.some((d) => share.atCap(d));
    if (full) options.onFullBatch?.();
    const { results, late } = await deliverBatch(options, claimed);
    for (const d of claimed) touched.add(d.sandboxId);
    const ids = new Set(results.map((r) => r.id));
    const settled = claimed.filter((d) => ids.has(d.id));
    share.release(settled);
    if (late) finishLate(options, claimed.filter((d) => !ids.has(d.id)), late);
    const chain = full && !late && round < rounds;
    let finished: number;
    if (chain) {
      ({ finished, next: batch } = await finishAndClaim(
        options.sql,
        options.owner,
        results,
        claim(),
      ));
    } else {
      finished = await finishDeliveries(options.sql, options.owner, results);
    }
    recorded(options, settled, results, finished);
    for (const r of results) {
      if (r.state === "pending") {
        retryAt = Math.min(retryAt, Date.now() + r.delayMs);
      }
    }
    if (!chain) {
      return {
        more: full,
        nextDueAt: retryAt < Infinity ? new Date(retryAt) : undefined,
        touched: [...touched],
      };
    }
  }
  if (batch.after !== undefined) share.after = batch.after;
  const due = Math.min(retryAt, batch.nextDueAt?.getTime() ?? Infinity);
  return {
    more: false,
    nextDueAt: due < Infinity ? new Date(due) : undefined,
    touched: touched.size > 0 ? [...touched] : undefined,
  };
}

/**
 * Records stragglers once they are done, apart from their batch: the
 * finish is fenced by the lease as any other.
 */
function finishLate(
  options: ConsumerOptions,
  claimed: ClaimedDelivery[],
  late: Promise<AttemptResult[]>,
) {
  options.share.detach(
    claimed.length,
    (async () => {
      try {
        const results = await late;
        const finished = await finishDeliveries(
          options.sql,
          options.owner,
          results,
        );
        recorded(options, claimed, results, finished);
      } catch (error) {
        // Unrecorded: the deliveries stay leased, and are sent again once
        // the lease runs out; the receivers' inboxes answer the repeat.
        options.log.error("late_finish_failed", { error });
      } finally {
        options.share.release(claimed);
        options.onLateFinished?.([...new Set(claimed.map((d) => d.sandboxId))]);
      }
    })(),
  );
}

/**
 * Sends one claimed batch. Returns the results of the deliveries done
 * within the share's `stragglerMs` (all of them, when the batch was quick
 * or no more may be left running), and for the rest, a promise of theirs.
 */
async function deliverBatch(
  options: ConsumerOptions,
  claimed: ClaimedDelivery[],
): Promise<{ results: AttemptResult[]; late?: Promise<AttemptResult[]> }> {
  let results: AttemptResult[] = [];
  const all = send(options, claimed, (r) => results.push(r));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), options.share.stragglerMs);
  });
  const whole = await Promise.race([all.then(() => true), cut]);
  clearTimeout(timer);
  if (whole || !options.share.canDetach(claimed.length - results.length)) {
    await all;
    return { results };
  }
  const early = results;
  results = [];
  return { results: early, late: all.then(() => results) };
}

/** What sending deliveries needs of a consumer's options. */
export type SendOptions = Pick<
  ConsumerOptions,
  | "owner"
  | "dispatcher"
  | "subscribers"
  | "retryDelaysMs"
  | "timeoutMs"
  | "log"
  | "faults"
  | "observeDelivered"
>;

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
async function send(
  options: SendOptions,
  claimed: ClaimedDelivery[],
  judged: (result: AttemptResult) => void,
): Promise<void> {
  const faults = await options.faults([
    ...new Set(claimed.map((d) => d.sandboxId)),
  ]);
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
    for (const d of group) judged(await attempt(options, d, faults));
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
  faults: Awaited<ReturnType<FaultReader>>,
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
    if (isOn(faults, d.sandboxId, CONSUMER_FAULTS.duplicateDeliveries)) {
      outcome = await post(options, subscriber, d);
    }
  }
  const label = subscriber?.label ?? d.subscriber;
  let judged = classify(
    outcome,
    label,
    options.timeoutMs,
    d.attempt,
    maxAttempts,
  );
  if (
    judged.state === "done" &&
    isOn(faults, d.sandboxId, CONSUMER_FAULTS.lostAcks)
  ) {
    judged = {
      state: d.attempt < maxAttempts ? "pending" : "dead",
      error: `acknowledgement lost after ${label} answered (lostAcks fault)`,
    };
  }
  return {
    id: d.id,
    state: judged.state,
    attempt: d.attempt,
    status: outcome.kind === "answered" ? outcome.status : null,
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
        reason: reasonOf(text),
      };
    } catch (error) {
      return { kind: "network", message: (error as Error).message };
    }
  })();
  try {
    return await Promise.race([send, timeout]);
  } finally {
    clearTimeout(timer);
  }
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
