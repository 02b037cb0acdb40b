/**
 * The JetStream consumer of one subscriber in one process: it takes the
 * subscriber's messages lane by lane (a durable consumer per tenant,
 * lanes.ts), records each attempt in PostgreSQL, sends, and answers the
 * broker by the result:
 *
 * | result (lib/delivery/classify.ts classify) | PostgreSQL        | JetStream          |
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
 * Fairness between tenants, as the PostgreSQL queue's claims have it
 * (lib/delivery/fair_share.ts): each tick goes round the lanes that have work,
 * starting after the lane it started last, and fetches from each no more
 * than the process's share leaves it (`perLane` of one tenant for one
 * subscriber, `perTenant` of one tenant in all) and the subscriber's
 * window leaves. Fetches and sends run on their own, so a lane whose
 * receiver is slow holds its own share and nothing else: another tenant's
 * message is fetched as soon as its bell rings.
 *
 * Which lanes have work: the bells (a count per tenant), what a fetch
 * tells of the lane (each message says how many are left undelivered), the
 * retries this consumer asked for (a nak with a delay is due again then),
 * and the workers' look at every lane each poll (`observe`). A fetch asks
 * for what the lane is thought to have, so that it ends at once instead of
 * holding a part of the window until it expires.
 *
 * Messages are taken with small fetches (never a buffered stream: AckWait
 * runs while a message waits in a client buffer), and sent as they come, in
 * bursts: what arrived together is recorded together, and a slow delivery
 * holds up no other. The bursts of every consumer of a process that come
 * while a record is out go in its next statement (`records`, joined).
 */
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { Sql } from "../../db/connect.ts";
import { envelopeSchema } from "../../outbox/envelope.ts";
import type { TickResult } from "../../wake/loop.ts";
import type { AttemptResult, ClaimedDelivery } from "../../ledger/delivery.ts";
import type {
  FairShare,
  Lane as ShareLane,
} from "../../delivery/fair_share.ts";
import type { PauseReader } from "../../ledger/pauses.ts";
import { recorded, sendAll, type SendOptions } from "../../delivery/send.ts";
import {
  type DeliveryRecords,
  joinedRecords,
  type Taken,
} from "../../ledger/broker_deliveries_sql.ts";
import { SOURCE_HEADER } from "./queue.ts";
import type { JetStream } from "./stream.ts";

export interface JetStreamConsumerOptions extends SendOptions {
  sql: Sql;
  subscriber: string;
  stream: JetStream;
  /** The process's share between tenants. */
  share: FairShare;
  /** The consumer's AckWait: the lease of an attempt. */
  ackWaitMs: number;
  /** Messages in flight (or asked for) at most (default 50). */
  window?: number;
  /** Messages taken by one fetch at most (default 25). */
  batch?: number;
  /** How long a fetch waits for what it asked (JetStream's minimum: 1 s). */
  expiresMs?: number;
  /**
   * How attempts are recorded; one for all of a process's consumers joins
   * their statements (default: this consumer's own).
   */
  records?: DeliveryRecords;
  /** Called after deliveries of these tenants were recorded. */
  onTouched?: (tenantIds: string[]) => void;
  /** Paused subscribers: their messages go back unattempted (../pauses.ts). */
  pauses?: PauseReader;
  /**
   * Asks for a tick: a fetch ended, or deliveries were recorded and the
   * share has room again (brokerLoops wakes every subscriber's loop, since
   * a tenant's share is one for all its subscribers).
   */
  wake?: () => void;
}

/**
 * How long the broker keeps a paused pair's message before offering it
 * again: also the longest a resume waits for it.
 */
export const PAUSED_REDELIVER_MS = 1000;

/** How long a burst waits for more messages that arrive with its first. */
const BURST_MS = 2;

/** How long a lane whose fetch failed waits before the next. */
const FETCH_RETRY_MS = 1000;

/** One tenant's lane, as this consumer knows it. */
interface LaneState {
  tenantId: string;
  consumer?: Consumer;
  /** Messages the lane is thought to have for a fetch now. */
  available: number;
  /** A fetch is open. */
  fetching: boolean;
  /** A bell rang while the fetch was open. */
  rung: boolean;
  /** When the retries this consumer asked for are due again. */
  due: number[];
  /** No fetch before this (after a failed one). */
  notBefore: number;
  /**
   * The highest stream sequence fetched from the lane, or known taken (by
   * another process: what a short fetch did not get).
   */
  seen: number;
  /** The highest stream sequence a bell named for the lane. */
  rungUpTo: number;
  /** When the lane last had work here (a lane idle for long is forgotten). */
  busyAt: number;
  /** The stream's generation (Lanes.generation) that `seen` belongs to. */
  generation: number;
}

/**
 * How long an idle lane is kept (with its consumer's handle, which costs
 * the broker a look-up to make again).
 */
const LANE_KEPT_MS = 60_000;

/** One subscriber's consumer; `tick` for a Loop, `stop` to finish. */
export class JetStreamConsumer {
  readonly #options: JetStreamConsumerOptions;
  readonly #batch: number;
  readonly #window: number;
  readonly #records: DeliveryRecords;
  /** Messages taken and not yet answered. */
  #inFlight = 0;
  /** Messages asked for by open fetches and not yet come. */
  #asked = 0;
  #lanes = new Map<string, LaneState>();
  /** The tenant whose lane the last fetch was from. */
  #after: string | undefined;
  #running = new Set<Promise<void>>();
  #fetches = new Set<Promise<void>>();

  constructor(options: JetStreamConsumerOptions) {
    this.#options = options;
    this.#batch = options.batch ?? 25;
    this.#window = options.window ?? 50;
    this.#records = options.records ??
      joinedRecords(options.sql, options.owner, options.ackWaitMs);
  }

  /** The lanes with work, for tests and logs. */
  get lanes(): number {
    return this.#lanes.size;
  }

  /**
   * New messages on a tenant's lane (a bell): `count` of them, the last at
   * stream sequence `seq`, if known. Nothing to do when a fetch of this
   * consumer had that sequence already (the messages came before the bell).
   */
  notify(tenantId: string, count: number, seq?: number) {
    const lane = this.#lane(tenantId);
    if (seq !== undefined && seq <= lane.seen) return;
    if (seq !== undefined) lane.rungUpTo = Math.max(lane.rungUpTo, seq);
    lane.available += count;
    if (lane.fetching) lane.rung = true;
    this.#wake();
  }

  /** What the lane's consumer says it has (the workers' look each poll). */
  observe(tenantId: string, pending: number, ackPending: number) {
    let lane = this.#lanes.get(tenantId);
    if (!lane && pending === 0 && ackPending === 0) return;
    lane ??= this.#lane(tenantId);
    if (lane.fetching) return;
    lane.available = Math.max(lane.available, believable(pending));
    // Unacknowledged beyond what this consumer holds and waits on: another
    // holder's, or redeliveries due (a process that died, an AckWait over).
    const ours = this.#held(tenantId).lane + lane.due.length;
    if (ackPending > ours) lane.available = Math.max(lane.available, 1);
    if (lane.available > 0) this.#wake();
  }

  /**
   * Starts a fetch on each lane with work, round-robin from the one after
   * the lane it started last, as far as the share and the window let it.
   * Returns at once, the fetches running; wakes the loop as they end.
   */
  tick(): Promise<TickResult> {
    const now = Date.now();
    let next = Infinity;
    const lanes = [...this.#lanes.values()];
    const first = lanes.findIndex((l) => l.tenantId === this.#after) + 1;
    for (let i = 0; i < lanes.length; i++) {
      const lane = lanes[(first + i) % lanes.length];
      if (lane.due.length > 0) {
        const later = lane.due.filter((t) => t > now);
        lane.available += lane.due.length - later.length;
        lane.due = later;
        if (later.length > 0) next = Math.min(next, ...later);
      }
      if (lane.fetching) continue;
      if (lane.available <= 0) {
        if (
          now - lane.busyAt > LANE_KEPT_MS && lane.due.length === 0 &&
          this.#held(lane.tenantId).lane === 0
        ) {
          this.#lanes.delete(lane.tenantId);
        }
        continue;
      }
      lane.busyAt = now;
      if (lane.notBefore > now) {
        next = Math.min(next, lane.notBefore);
        continue;
      }
      const held = this.#held(lane.tenantId);
      const { perLane, perTenant } = this.#options.share;
      const n = Math.min(
        this.#batch,
        lane.available,
        this.#window - this.#inFlight - this.#asked,
        perLane - held.lane,
        perTenant - held.tenant,
      );
      // At its share, or the window is full: the end of a send wakes it.
      if (n <= 0) continue;
      this.#fetch(lane, n);
      this.#after = lane.tenantId;
    }
    return Promise.resolve({
      more: false,
      nextDueAt: next < Infinity ? new Date(next) : undefined,
    });
  }

  /** Waits for the fetches open now to end (their sends may go on). */
  async fetched(): Promise<void> {
    await Promise.all([...this.#fetches]);
  }

  /** Waits for every fetch and send in flight to be recorded and answered. */
  async stop(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
  }

  #wake() {
    this.#options.wake?.();
  }

  #lane(tenantId: string): LaneState {
    const generation = this.#options.stream.lanes.generation;
    let lane = this.#lanes.get(tenantId);
    if (lane && lane.generation !== generation) {
      // The stream was made again: its sequences start over, and a bell
      // for its first messages must not pass for one already fetched.
      lane.generation = generation;
      lane.seen = 0;
      lane.rungUpTo = 0;
    }
    if (!lane) {
      lane = {
        tenantId,
        available: 0,
        fetching: false,
        rung: false,
        due: [],
        notBefore: 0,
        seen: 0,
        rungUpTo: 0,
        busyAt: Date.now(),
        generation,
      };
      this.#lanes.set(tenantId, lane);
    }
    return lane;
  }

  /** What the process holds of a tenant: for this subscriber, and in all. */
  #held(tenantId: string): { lane: number; tenant: number } {
    const held = this.#options.share.held();
    let lane = 0;
    let tenant = 0;
    for (let i = 0; i < held.tenantIds.length; i++) {
      if (held.tenantIds[i] !== tenantId) continue;
      tenant += held.counts[i];
      if (held.subscribers[i] === this.#options.subscriber) {
        lane += held.counts[i];
      }
    }
    return { lane, tenant };
  }

  #track(work: Promise<void>) {
    const tracked: Promise<void> = work.finally(() =>
      this.#running.delete(tracked)
    );
    this.#running.add(tracked);
  }

  /** Fetches up to `n` messages of a lane and starts sending them. */
  #fetch(lane: LaneState, n: number) {
    const { stream, subscriber, log } = this.#options;
    lane.fetching = true;
    lane.rung = false;
    this.#asked += n;
    // Every message rung for before the fetch is in the lane by now: a
    // fetch that ends short has had them, or another process has.
    const rungBefore = lane.rungUpTo;
    let got = 0;
    const fetch = (async () => {
      try {
        lane.consumer ??= await stream.js.consumers.get(
          stream.names.stream,
          stream.names.consumer(subscriber, lane.tenantId),
        );
        const messages = await lane.consumer.fetch({
          max_messages: n,
          expires: this.#options.expiresMs ?? 1000,
        });
        let left = 0;
        for await (const burst of bursts(messages, BURST_MS)) {
          got += burst.length;
          this.#asked -= burst.length;
          left = burst[burst.length - 1].info.pending;
          for (const msg of burst) lane.seen = Math.max(lane.seen, msg.seq);
          this.#start(lane, burst);
        }
        // All it asked for: the last message said how many are left, a
        // count that NATS 2.9 sometimes gives as none while a publish goes
        // on (consumer info showed 2^64 - 1 then): a message rung for and
        // not yet fetched is still there, and the next fetch asks for one.
        // Fewer: the fetch waited them out, and the lane has none left (all
        // rung for before it are taken), unless a bell rang meanwhile.
        if (got === n) {
          lane.available = believable(left);
          if (lane.rungUpTo > lane.seen) {
            lane.available = Math.max(lane.available, 1);
          }
        } else {
          lane.available = 0;
          lane.seen = Math.max(lane.seen, rungBefore);
        }
        if (lane.rung) lane.available = Math.max(lane.available, 1);
      } catch (error) {
        // The fetch stopped early: its heartbeats came late (a loaded
        // process), the broker is away, or the lane's consumer is gone (the
        // server dropped it idle while a publish raced it), which looks the
        // same from here. Make sure of the consumer (made again from the
        // stream's first message of the lane if it was gone) and fetch
        // again; if even that fails, wait a little first.
        log.warn("broker_fetch_failed", {
          subscriber,
          tenant: lane.tenantId,
          error,
        });
        lane.available = Math.max(lane.available, 1);
        try {
          await stream.lanes.ensure(
            [{ subscriber, tenantId: lane.tenantId }],
            true,
          );
        } catch {
          lane.consumer = undefined;
          lane.notBefore = Date.now() + FETCH_RETRY_MS;
        }
      } finally {
        this.#asked -= n - got;
        lane.fetching = false;
        this.#wake();
      }
    })();
    this.#track(fetch);
    this.#fetches.add(fetch);
    fetch.finally(() => this.#fetches.delete(fetch));
  }

  /** Sends a burst of a lane's messages, holding the lane's share. */
  #start(lane: LaneState, burst: JsMsg[]) {
    const held: ShareLane[] = burst.map(() => ({
      tenantId: lane.tenantId,
      subscriber: this.#options.subscriber,
    }));
    this.#inFlight += burst.length;
    this.#options.share.hold(held);
    this.#track(
      this.#handle(lane, burst)
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
          this.#options.share.release(held);
          this.#wake();
        }),
    );
  }

  async #handle(lane: LaneState, burst: JsMsg[]) {
    const options = this.#options;
    const taken = new Map<string, { msg: JsMsg; t: Taken }>();
    for (const msg of burst) {
      const body = safeJson(msg.string());
      const parsed = envelopeSchema.safeParse(body);
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
          t: {
            subscriber: options.subscriber,
            envelope: parsed.data,
            source: msg.headers?.get(SOURCE_HEADER) || undefined,
            body,
          },
        });
      }
    }
    if (taken.size === 0) return;
    await this.#send(lane, taken);
  }

  async #send(
    lane: LaneState,
    taken: Map<string, { msg: JsMsg; t: Taken }>,
  ) {
    const options = this.#options;
    // A paused pair's message goes back to the broker for later, before
    // anything is recorded: no attempt, and never dead (max_deliver is -1).
    for (const [key, { msg, t }] of taken) {
      if (await options.pauses?.isPaused(t.envelope.tenantId, t.subscriber)) {
        msg.nak(PAUSED_REDELIVER_MS);
        taken.delete(key);
      }
    }
    if (taken.size === 0) return;
    const started = await this.#records.start(
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
    const finished = await this.#records.finish(results);
    const byId = new Map(started.map((d) => [d.id, d]));
    for (const r of results) {
      // Fenced out: after AckWait JetStream gave the message to another
      // consumer, which took the delivery over and answers the message. An
      // ack from here would drop the retry that one may have asked for.
      const state = finished.get(r.id);
      if (state === undefined) continue;
      const msg = msgOf(byId.get(r.id)!);
      // A held delivery is published again when it is released.
      if (state === "pending") {
        msg.nak(r.delayMs);
        lane.due.push(Date.now() + r.delayMs);
      } else msg.ack();
    }
    recorded(options, started, results, finished.size);
    options.onTouched?.([...new Set(started.map((d) => d.tenantId))]);
  }
}

/**
 * A pending count from the broker, or 1 (there is something) for the count
 * NATS 2.9 sometimes gives, under zero, as 2^64 - 1.
 */
export function believable(pending: number): number {
  return pending > 2 ** 32 ? 1 : pending;
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
