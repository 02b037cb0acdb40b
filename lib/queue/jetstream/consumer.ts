/**
 * A JetStream consumer of one subscriber: pull a few messages at a time
 * from its durable consumer, record each attempt in PostgreSQL, send, and
 * answer the broker by the result:
 *
 * | result (lib/queue/classify.ts classify) | PostgreSQL        | JetStream          |
 * | --------------------------------------- | ----------------- | ------------------ |
 * | done (2xx)                              | done              | ack                |
 * | retry (409, 5xx, timeout)               | pending, attempts | nak with the delay |
 * | dead (422, other 4xx, the last retry)   | dead, last error  | ack: not again     |
 * | already settled (a repeat, a late copy) | unchanged         | ack                |
 * | lease lost (taken over after AckWait)   | unchanged         | none: the holder's |
 *
 * PostgreSQL is written before the broker is answered: a crash in between
 * leaves the message unacknowledged, JetStream delivers it again after
 * AckWait, and the delivery's row says what was already done (a done or
 * dead delivery is only acknowledged; an open one is sent again, and the
 * receiver's inbox answers a repeat as the first time).
 *
 * Messages are taken with small fetches (up to `batch` at once, never a
 * buffered stream: AckWait runs while a message waits in a client buffer),
 * and sent as they come, in bursts: what arrived together is recorded
 * together, and a slow delivery holds up no other.
 */
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { Sql } from "../../db/connect.ts";
import { envelopeSchema } from "../../outbox/envelope.ts";
import type { TickResult } from "../../wake/loop.ts";
import type { AttemptResult, ClaimedDelivery } from "../delivery.ts";
import type { PauseReader } from "../pauses.ts";
import { finishDeliveryIds } from "../postgres/deliveries_sql.ts";
import { recorded, sendAll, type SendOptions } from "../send.ts";
import { startDeliveries, type Taken } from "./deliveries_sql.ts";

export interface JetStreamConsumerOptions extends SendOptions {
  sql: Sql;
  subscriber: string;
  consumer: Consumer;
  /** The consumer's AckWait: the lease of an attempt. */
  ackWaitMs: number;
  /** Messages in flight at most (default 20). */
  window?: number;
  /** Messages taken by one fetch at most (default 10). */
  batch?: number;
  /** How long a fetch waits for a first message (JetStream's minimum: 1 s). */
  expiresMs?: number;
  /** Called after deliveries of these sandboxes were recorded. */
  onTouched?: (sandboxIds: string[]) => void;
  /** Paused subscribers: their messages go back unattempted (../pauses.ts). */
  pauses?: PauseReader;
}

/**
 * How long the broker keeps a paused pair's message before offering it
 * again: also the longest a resume waits for it.
 */
export const PAUSED_REDELIVER_MS = 1000;

/** How long a burst waits for more messages that arrive with its first. */
const BURST_MS = 2;

/** One subscriber's consumer; `tick` for a Loop, `stop` to finish. */
export class JetStreamConsumer {
  readonly #options: JetStreamConsumerOptions;
  readonly #batch: number;
  readonly #window: number;
  #inFlight = 0;
  #running = new Set<Promise<void>>();

  constructor(options: JetStreamConsumerOptions) {
    this.#options = options;
    this.#batch = options.batch ?? 10;
    this.#window = options.window ?? 20;
  }

  /**
   * Takes what the broker has (waiting up to `expiresMs` for a first
   * message) and starts sending it; returns once the fetch is over, with
   * the sends still running. Always `more`: the next fetch is the wait.
   */
  async tick(): Promise<TickResult> {
    while (this.#inFlight >= this.#window) {
      await Promise.race(this.#running);
    }
    const messages = await this.#options.consumer.fetch({
      max_messages: Math.min(this.#batch, this.#window - this.#inFlight),
      expires: this.#options.expiresMs ?? 1000,
    });
    for await (const burst of bursts(messages, BURST_MS)) {
      this.#inFlight += burst.length;
      const work: Promise<void> = this.#handle(burst)
        .catch((error) =>
          // Unrecorded and unanswered: JetStream delivers them again after
          // AckWait, and their rows say what was done.
          this.#options.log.error("broker_batch_failed", {
            subscriber: this.#options.subscriber,
            error,
          })
        )
        .finally(() => {
          this.#inFlight -= burst.length;
          this.#running.delete(work);
        });
      this.#running.add(work);
    }
    return { more: true };
  }

  /** Waits for every send in flight to be recorded and answered. */
  async stop(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
  }

  async #handle(burst: JsMsg[]) {
    const options = this.#options;
    const taken = new Map<string, { msg: JsMsg; t: Taken }>();
    for (const msg of burst) {
      const parsed = envelopeSchema.safeParse(safeJson(msg.string()));
      if (!parsed.success) {
        // Not an envelope: nothing on this stream but the relay's publishes
        // should be. It cannot become one by being sent again.
        options.log.error("broker_message_refused", {
          subscriber: options.subscriber,
          subject: msg.subject,
          seq: msg.seq,
          error: parsed.error.issues[0]?.message,
        });
        msg.term();
        continue;
      }
      const key = parsed.data.messageId;
      // Two copies of one delivery in a burst (a redelivery and a redrive):
      // one is sent, the other only acknowledged.
      if (taken.has(key)) msg.ack();
      else {
        taken.set(key, {
          msg,
          t: { subscriber: options.subscriber, envelope: parsed.data },
        });
      }
    }
    if (taken.size === 0) return;
    await this.#send(taken);
  }

  async #send(taken: Map<string, { msg: JsMsg; t: Taken }>) {
    const options = this.#options;
    // A paused pair's message goes back to the broker for later, before
    // anything is recorded: no attempt, and never dead (max_deliver is -1).
    for (const [key, { msg, t }] of taken) {
      if (await options.pauses?.isPaused(t.envelope.sandboxId, t.subscriber)) {
        msg.nak(PAUSED_REDELIVER_MS);
        taken.delete(key);
      }
    }
    if (taken.size === 0) return;
    const started = await startDeliveries(
      options.sql,
      options.owner,
      options.ackWaitMs,
      [...taken.values()].map((x) => x.t),
    );
    const startedIds = new Set(started.map((d) => d.messageId));
    for (const [key, { msg }] of taken) {
      if (!startedIds.has(key)) msg.ack();
    }
    if (started.length === 0) return;
    const msgOf = (d: ClaimedDelivery) => taken.get(d.messageId)!.msg;
    // A send may outlast AckWait when a receiver is slow and deliveries are
    // sent twice: tell JetStream the work goes on.
    const working = setInterval(
      () => started.forEach((d) => msgOf(d).working()),
      Math.max(1000, Math.floor(options.ackWaitMs / 3)),
    );
    let results: AttemptResult[];
    try {
      results = await sendAll(options, started);
    } finally {
      clearInterval(working);
    }
    const finished = await finishDeliveryIds(
      options.sql,
      options.owner,
      results,
    );
    const byId = new Map(started.map((d) => [d.id, d]));
    for (const r of results) {
      // Fenced out: after AckWait JetStream gave the message to another
      // consumer, which took the delivery over and answers the message. An
      // ack from here would drop the retry that one may have asked for.
      if (!finished.has(r.id)) continue;
      const msg = msgOf(byId.get(r.id)!);
      if (r.state === "pending") msg.nak(r.delayMs);
      else msg.ack();
    }
    recorded(options, started, results, finished.size);
    options.onTouched?.([...new Set(started.map((d) => d.sandboxId))]);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Groups what an async iterable yields into bursts: a burst starts with the
 * next item and takes every item that follows within `windowMs` of the one
 * before it.
 */
export async function* bursts<T>(
  source: AsyncIterable<T>,
  windowMs: number,
): AsyncGenerator<T[]> {
  const it = source[Symbol.asyncIterator]();
  let next = it.next();
  for (;;) {
    const first = await next;
    if (first.done) return;
    const burst = [first.value];
    next = it.next();
    for (;;) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const quiet = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), windowMs);
      });
      const more = await Promise.race([next, quiet]);
      clearTimeout(timer);
      if (more === null) break;
      if (more.done) {
        yield burst;
        return;
      }
      burst.push(more.value);
      next = it.next();
    }
    yield burst;
  }
}
