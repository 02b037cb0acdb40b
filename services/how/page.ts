/**
 * Everything the How it's built page shows, as one read model (the page and
 * `GET /api/how-it-works` render the same object): the routing table, the
 * settings that decide retries, and, for a visitor with a sandbox, its own
 * rows: the last order's outbox rows, today's loop-guard re-arms, each
 * inbox's repeats, the dead letters, what a paid order costs, and the
 * walkthrough's checklist.
 */
import type { Config } from "../../config.ts";
import type { Sql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { GUARD_LIMIT } from "../../lib/outbox/mod.ts";
import { LABELS, RECEIVERS, ROUTING, SENDERS } from "../routing.ts";
import { type Costs, costs } from "./costs.ts";
import { type BenchmarkComparison, benchmarkComparison } from "./benchmark.ts";
import { type TryIt, tryIt } from "./try_it.ts";

/** One outbox row of the visitor's last order. */
export interface OutboxRowView {
  service: string;
  messageId: string;
  eventType: string;
  state: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  publishedAt: string | null;
  /** From the commit to the queue having it, in ms; null: not yet. */
  gapMs: number | null;
}

/** What the visitor's own sandbox shows on the page. */
export interface SandboxFigures {
  lastOrder: { orderId: string; state: string; outbox: OutboxRowView[] } | null;
  loopGuard: {
    /** Today's (UTC) automatic re-arms, per sender and in all. */
    rearmsToday: Record<string, number>;
    total: number;
    /** Rows the guard parked: they wait for a command or an operator. */
    parked: number;
    /** Rows waiting for the relay's next retry after a failed publish. */
    retrying: number;
  };
  inboxes: {
    receiver: string;
    /** Messages this inbox holds (applied or refused). */
    messages: number;
    /** Repeats answered from the inbox, changing nothing. */
    repeats: number;
  }[];
  repeatsTotal: number;
  deliveries: { dead: number; refused: number; redrives: number };
  costs: Costs;
  tryIt: TryIt;
}

/** The answer of `GET /api/how-it-works`. */
export interface HowItWorks {
  /** OrderPaid's receivers, read from the routing table. */
  paidReceivers: { name: string; label: string }[];
  routing: Record<string, string[]>;
  senders: string[];
  settings: {
    retryDelaysMs: number[];
    deliveryTimeoutMs: number;
    relayRetryMs: number;
    guardLimitPerDay: number;
    replayHorizonDays: number;
    pollIntervalMs: number;
    queue: "postgres" | "jetstream";
  };
  /** Null without a session: the page then shows no sandbox's figures. */
  sandbox: SandboxFigures | null;
  benchmark: BenchmarkComparison | null;
}

const iso = (d: Date | null) => d ? d.toISOString() : null;

async function sandboxFigures(
  sql: Sql,
  sandboxId: string,
): Promise<Omit<SandboxFigures, "costs" | "tryIt">> {
  // Each part is read in the database that holds it (services/databases.ts).
  return await readServices(
    sql,
    sandboxId,
    async (at, queues) => {
      const [last] = await at(
        "orders",
        (sql) =>
          sql<{ id: string; state: string }[]>`
      select id, state from orders.orders
       order by created_at desc, id limit 1`,
      );
      const outbox: OutboxRowView[] = [];
      const rearmsToday: Record<string, number> = {};
      let parked = 0;
      let retrying = 0;
      for (const service of SENDERS) {
        if (last) {
          // Owed, in the outbox; published, in the queue's copy (the gap is
          // from the message's creation to its publish).
          const rows = await at(service, (sql) =>
            sql`
          select message_id, type, state, attempts, last_error, created_at,
                 null::timestamptz as published_at, null::float8 as gap_ms
            from ${sql(`${service}.outbox`)} o
           where envelope ->> 'aggregateId' = ${last.id}
             and not exists (
               select from queue.messages m where m.message_id = o.message_id)
          union all
          select message_id, type, 'published', 0, null, created_at,
                 published_at,
                 (extract(epoch from published_at - created_at) * 1000)::float8
            from (select message_id, type, published_at,
                         (envelope->>'occurredAt')::timestamptz as created_at
                    from queue.messages
                   where aggregate_id = ${last.id} and source = ${service}) m
           order by created_at`);
          for (const r of rows) {
            outbox.push({
              service,
              messageId: r.message_id,
              eventType: r.type,
              state: r.state,
              attempts: r.attempts,
              lastError: r.last_error,
              createdAt: iso(r.created_at)!,
              publishedAt: iso(r.published_at),
              gapMs: r.gap_ms === null ? null : Math.round(r.gap_ms * 10) / 10,
            });
          }
        }
        const [g] = await at(service, (sql) =>
          sql<{ rearms: number }[]>`
        select coalesce(sum(rearms), 0)::int as rearms
          from ${sql(`${service}.relay_guard`)}
         where day = (now() at time zone 'utc')::date`);
        rearmsToday[service] = g.rearms;
        const [w] = await at(
          service,
          (sql) =>
            sql<{ parked: number; retrying: number }[]>`
        select count(*) filter (where next_attempt_at = 'infinity')::int
                 as parked,
               count(*) filter (where next_attempt_at <> 'infinity')::int
                 as retrying
          from ${sql(`${service}.outbox`)}
         where attempts > 0`,
        );
        parked += w.parked;
        retrying += w.retrying;
      }
      const inboxes = [];
      for (const receiver of [...RECEIVERS, "orders"]) {
        const [i] = await at(
          receiver,
          (sql) =>
            sql<{ messages: number; repeats: number }[]>`
        select count(*)::int as messages,
               coalesce(sum(repeats), 0)::int as repeats
          from ${sql(`${receiver}.inbox`)}`,
        );
        inboxes.push({ receiver, ...i });
      }
      const d = { dead: 0, refused: 0, redrives: 0 };
      for (const queue of queues) {
        const [q] = await at(queue, (sql) =>
          sql<typeof d[]>`
        select (select count(*)::int from queue.deliveries where state = 'dead')
                 as dead,
               (select count(*)::int from queue.deliveries
                 where state = 'refused') as refused,
               (select count(*)::int from queue.actions
                 where action = 'redrive') as redrives`);
        d.dead += q.dead;
        d.refused += q.refused;
        d.redrives += q.redrives;
      }
      return {
        lastOrder: last
          ? { orderId: last.id, state: last.state, outbox }
          : null,
        loopGuard: {
          rearmsToday,
          total: Object.values(rearmsToday).reduce((a, b) => a + b, 0),
          parked,
          retrying,
        },
        inboxes,
        repeatsTotal: inboxes.reduce((sum, i) => sum + i.repeats, 0),
        deliveries: d,
      };
    },
  );
}

/**
 * The page's read model; `sandboxId` null for a visitor without a session.
 *
 * @example
 * ```ts
 * const view = await howItWorks(sql, config, session?.sandboxId ?? null);
 * ```
 */
export async function howItWorks(
  sql: Sql,
  config: Config,
  sandboxId: string | null,
): Promise<HowItWorks> {
  const paid = ROUTING.OrderPaid ?? [];
  const sandbox = sandboxId === null ? null : {
    ...await sandboxFigures(sql, sandboxId),
    costs: await costs(sql, sandboxId),
    tryIt: await tryIt(sql, sandboxId),
  };
  return {
    paidReceivers: paid.map((name) => ({
      name,
      label: LABELS[name as keyof typeof LABELS] ?? name,
    })),
    routing: Object.fromEntries(
      Object.entries(ROUTING).map(([type, subs]) => [type, [...subs]]),
    ),
    senders: [...SENDERS],
    settings: {
      retryDelaysMs: [...config.RETRY_DELAYS_MS],
      deliveryTimeoutMs: config.DELIVERY_TIMEOUT_MS,
      relayRetryMs: config.RELAY_RETRY_MS,
      guardLimitPerDay: GUARD_LIMIT,
      replayHorizonDays: config.REPLAY_HORIZON_DAYS,
      pollIntervalMs: config.POLL_INTERVAL_MS,
      queue: config.QUEUE,
    },
    sandbox,
    benchmark: await benchmarkComparison(),
  };
}
