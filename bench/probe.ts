/**
 * The bakery's relay and consumers in this process, assembled as
 * services/mod.ts `startBakeryMessaging` does (same queue, routing,
 * receivers, subscribers, audit and settings) and woken as bakery.ts wakes
 * them (an after-commit waker on the pool), with two transparent taps:
 *
 * - the queue: when the relay's move of a batch has committed (claim and
 *   publish are one transaction; the messages it handed over name
 *   themselves, the others are read back from queue.messages off the
 *   relay's path), or when the long way hands a claimed batch to `publish`,
 *   each message's claim time is noted;
 * - the dispatcher: when a receiver answers 200, its subscriber is noted;
 *   once every subscriber the routing names has answered, the message is
 *   complete and its waiters are called.
 *
 * Messages are tracked from publish to completion only, so memory stays
 * bounded by what is in flight.
 */
import { connect, type Sql } from "../lib/db/connect.ts";
import { createLogger, type Logger } from "../lib/log/mod.ts";
import { pgFaults } from "../lib/faults/mod.ts";
import { coalescingWaker, setOutboxWaker } from "../lib/outbox/mod.ts";
import { Dispatcher } from "../lib/delivery/mod.ts";
import { postgresCarrier } from "../lib/carriers/mod.ts";
import type { Queue } from "../lib/ledger/mod.ts";
import type { Shortcut } from "../lib/carriers/mod.ts";
import { type Messaging, startMessaging } from "../lib/workers/mod.ts";
import { parseConfig } from "../config.ts";
import { RELAY_CONNECTIONS } from "../services/mod.ts";
import {
  BAKERY_SUBSCRIBERS,
  bakeryDispatcher,
  INTERNAL_ORIGIN,
} from "../services/receivers/endpoints.ts";
import { ROUTING, SENDERS, SUBSCRIBERS } from "../services/routing.ts";

export interface Completion {
  type: string;
  aggregateId: string;
  messageId: string;
  /** performance.now() when the relay had claimed it. */
  claimedAt: number;
  /** performance.now() when the last subscriber answered 200. */
  doneAt: number;
}

interface Tracked {
  type: string;
  aggregateId: string;
  claimedAt: number;
  expected: number;
  seen: Set<string>;
}

export interface Probe {
  messaging: Messaging;
  /** Calls `fn` when `type` for `aggregateId` is claimed and when complete. */
  watch(
    type: string,
    aggregateId: string,
    fn: (c: Completion) => void,
  ): void;
  unwatch(type: string, aggregateId: string): void;
  /** Messages published and not yet complete. */
  inFlight(): number;
  /**
   * Requests to the receivers not yet answered, including those whose
   * consumer gave up waiting (a slow receiver past the timeout).
   */
  running(): number;
  stop(): Promise<void>;
}

export async function startProbe(options: {
  url: string;
  sql: Sql;
  /** Where the LISTEN connection goes (another database blocks every hint). */
  listenUrl?: string;
  pollMs?: number;
  /** Wake the in-process relay after a commit on `sql` (default true). */
  localWake?: boolean;
  /** Settings as the environment gives them, e.g. DELIVERY_TIMEOUT_MS. */
  settings?: Record<string, string>;
  /** Where the workers log (default: warnings and errors to stderr). */
  log?: Logger;
}): Promise<Probe> {
  const config = parseConfig({
    LOG_LEVEL: "warn",
    ...options.settings,
    ...(options.pollMs ? { POLL_INTERVAL_MS: String(options.pollMs) } : {}),
  });
  const log = options.log ??
    createLogger("warn", (line) => console.error(line));
  const tracked = new Map<string, Tracked>();
  const watchers = new Map<string, (c: Completion) => void>();
  const key = (type: string, aggregateId: string) => `${type}:${aggregateId}`;
  const faults = pgFaults(options.sql);

  // Answers that came before their message was tracked: a consumer woken by
  // the move's NOTIFY may have a receiver answer before the move's messages
  // are read back here. Kept until that look names the message.
  const early = new Map<string, { seen: Set<string>; at: number }>();
  const complete = (messageId: string, t: Tracked, doneAt: number) => {
    tracked.delete(messageId);
    watchers.get(key(t.type, t.aggregateId))?.({
      type: t.type,
      aggregateId: t.aggregateId,
      messageId,
      claimedAt: t.claimedAt,
      doneAt,
    });
  };
  const track = (
    messageId: string,
    type: string,
    aggregateId: string,
    claimedAt = performance.now(),
  ) => {
    const before = early.get(messageId);
    early.delete(messageId);
    const t: Tracked = {
      type,
      aggregateId,
      claimedAt,
      expected: ROUTING[type]?.length ?? 0,
      seen: before?.seen ?? new Set(),
    };
    tracked.set(messageId, t);
    if (before && t.seen.size >= t.expected) complete(messageId, t, before.at);
  };
  // Each moved message is tracked once, whether named by a handoff or read
  // back (moves side by side may read each other's), and remembered for a
  // minute.
  const recent = new Map<string, number>();
  const trackOnce = (
    messageId: string,
    type: string,
    aggregateId: string,
    at: number,
  ) => {
    for (const [id, t] of recent) {
      if (at - t < 60_000) break;
      recent.delete(id);
    }
    if (recent.has(messageId)) return;
    recent.set(messageId, at);
    track(messageId, type, aggregateId, at);
  };
  // The messages a move stored, read back: those of its sandboxes stored
  // since it started.
  const trackMoved = async (
    service: string,
    sandboxIds: string[],
    since: Date,
    at: number,
  ) => {
    const rows = await options.sql<
      { message_id: string; type: string; aggregate_id: string }[]
    >`
      select message_id, type, aggregate_id from queue.messages
       where tenant_id = any(${sandboxIds}::uuid[])
         and published_at >= ${since} and source = ${service}`;
    for (const r of rows) trackOnce(r.message_id, r.type, r.aggregate_id, at);
  };
  // As the bakery's relay, its moves have connections of their own
  // (services/mod.ts): on the pool that the load and the receivers share,
  // a move waited for a connection behind them.
  const relaySql = connect(options.url, {
    max: RELAY_CONNECTIONS,
    applicationName: "bench-relay",
  });
  const base = postgresCarrier({
    sql: relaySql,
    routing: ROUTING,
    slots: RELAY_CONNECTIONS,
  });
  const inner = base.queue;
  const queue: Queue = {
    publish: (messages) => {
      for (const { envelope: e } of messages) {
        track(e.messageId, e.type, e.aggregateId);
      }
      return inner.publish(messages);
    },
  };
  const direct = base.shortcut!;
  // The tap must not stand in the relay's way: the move's handoff reaches
  // the consumers only once this returns. What was handed over names its
  // messages; any others are read back on the side (their answers, if
  // first, wait in `early`).
  const shortcut: Shortcut = {
    move: async (service, limit, moveOptions) => {
      const since = new Date();
      const moved = await direct.move(service, limit, moveOptions);
      const at = performance.now();
      const named = new Set<string>();
      for (const h of moved.handed) {
        named.add(h.messageId);
        trackOnce(h.messageId, h.type, h.aggregateId, at);
      }
      if (moved.published > named.size) {
        trackMoved(service, moved.tenantIds, since, at).catch((error) =>
          log.warn("probe_read_back_failed", { error })
        );
      }
      return moved;
    },
  };
  let running = 0;
  const receivers = bakeryDispatcher({
    sql: options.sql,
    log,
    config,
    faults,
  });
  /** A message applied (answered 200) by `subscriber`, as it is seen. */
  const applied = (messageId: string, subscriber: string) => {
    const t = tracked.get(messageId);
    if (t) {
      t.seen.add(subscriber);
      if (t.seen.size >= t.expected) {
        complete(messageId, t, performance.now());
      }
    } else {
      const e = early.get(messageId) ?? { seen: new Set(), at: 0 };
      e.seen.add(subscriber);
      e.at = performance.now();
      early.set(messageId, e);
    }
  };
  const dispatcher = new Dispatcher().register(
    INTERNAL_ORIGIN,
    async (request) => {
      // `/receivers/<name>` for one message, `/receivers/<name>/batch` for
      // a batch, whose answer holds one result per message.
      const [, , subscriber, batch] = new URL(request.url).pathname.split("/");
      running++;
      let response: Response;
      try {
        response = await receivers.send(request);
      } finally {
        running--;
      }
      if (response.status !== 200) return response;
      if (!batch) {
        applied(request.headers.get("x-message-id") ?? "", subscriber);
        return response;
      }
      const { results } = await response.clone().json() as {
        results: { messageId: string; status: number }[];
      };
      for (const r of results) {
        if (r.status === 200) applied(r.messageId, subscriber);
      }
      return response;
    },
  );
  // As services/mod.ts `startBakeryMessaging` (keep the two in step).
  const messaging = await startMessaging({
    url: options.listenUrl ?? options.url,
    sql: options.sql,
    log,
    faults,
    senders: SENDERS,
    transport: { ...base, queue, shortcut },
    dispatcher,
    subscribers: BAKERY_SUBSCRIBERS,
    pollMs: config.POLL_INTERVAL_MS,
    relayRetryMs: config.RELAY_RETRY_MS,
    retryDelaysMs: config.RETRY_DELAYS_MS,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    audit: {
      reader: "console",
      subscribers: SUBSCRIBERS,
      inboxOf: (subscriber) => `${subscriber}.inbox`,
    },
  });
  // As bakery.ts: commits on this pool wake the relay after commit (in
  // process at once, a coalesced NOTIFY for other processes). Without the
  // local wake, a commit here is like one in another process.
  const waker = coalescingWaker(options.sql, {
    local: options.localWake === false ? undefined : messaging,
    onError: (error) => log.warn("outbox_wake_failed", { error }),
  });
  setOutboxWaker(options.sql, waker.wake);
  return {
    messaging,
    watch: (type, aggregateId, fn) => watchers.set(key(type, aggregateId), fn),
    unwatch: (type, aggregateId) => watchers.delete(key(type, aggregateId)),
    inFlight: () => tracked.size,
    running: () => running,
    stop: async () => {
      await messaging.stop();
      await waker.flush();
      await relaySql.end({ timeout: 5 });
    },
  };
}

/** Open outbox rows and open deliveries: the work not yet done. */
export async function backlog(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select (select count(*) from orders.outbox)
         + (select count(*) from billing.outbox)
         + (select count(*) from queue.deliveries
             where state in ('pending', 'in_flight')) as n`;
  return Number(row.n);
}
