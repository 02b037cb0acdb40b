/**
 * What the console's overview shows, for its page and its twin
 * (`GET /api/console/overview`): outbox ages, closure, dead letters per
 * receiver, receiver health, payments needing a refund, test-checkout
 * events the webhook has not taken, the last hour per
 * receiver (its charts), how many order violations there are, how
 * many deliveries the ledger sent again because the broker lost them, and
 * how many workers are live and silent.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { outboxAges } from "./outbox.ts";
import { closure } from "./closure.ts";
import { deadLettersBySubscriber, receiverHealth } from "./deliveries.ts";
import { refundsDue } from "./refunds.ts";
import { undeliveredCheckoutEvents } from "./checkout_events.ts";
import { receiverStats } from "./receivers.ts";
import { orderViolations } from "./violations.ts";
import { readServices } from "../databases.ts";
import { workerRows } from "./workers.ts";

/** Deliveries of a sandbox the broker lost, sent again from the ledger. */
async function republished(sql: Sql, sandboxId: string) {
  const rows = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(
        queues.map((q) =>
          at(q, async (sql) =>
            (await sql<{ deliveries: number; copies: number }[]>`
        select count(*)::int as deliveries,
               coalesce(sum(republishes), 0)::int as copies
          from queue.deliveries where republishes > 0`)[0])
        ),
      ),
  );
  return {
    deliveries: rows.reduce((n, r) => n + r.deliveries, 0),
    copies: rows.reduce((n, r) => n + r.copies, 0),
  };
}

/**
 * Deliveries waiting for a retry: pending after at least one failed
 * attempt. The outbox's "waiting for retry" counts rows the relay could
 * not publish; a receiver that fails leaves its retries here instead.
 */
async function retryingDeliveries(sql: Sql, sandboxId: string) {
  const rows = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(
        queues.map((q) =>
          at(q, async (sql) =>
            (await sql<{ n: number; next: Date | null }[]>`
          select count(*)::int as n, min(next_attempt_at) as next
            from queue.deliveries
           where state in ('pending', 'in_flight') and attempts > 0`)[0])
        ),
      ),
  );
  const next = rows.map((r) => r.next).filter((d) => d !== null)
    .sort((a, b) => +a! - +b!)[0] ?? null;
  return {
    count: rows.reduce((n, r) => n + r.n, 0),
    nextAttemptAt: next ? next.toISOString() : null,
  };
}

/**
 * The workers by their heartbeat, live and silent: the Workers page's rows
 * counted. Workers are shared by every sandbox, so every overview shows
 * the same two figures.
 */
async function workerCounts(sql: Sql, sandboxId: string) {
  const rows = await workerRows(sql, sandboxId);
  const silent = rows.filter((w) => w.state === "silent").length;
  return { live: rows.length - silent, silent };
}

/** The overview of one sandbox, read in parallel. */
export async function overviewData(sql: Sql, sandboxId: string) {
  const [
    outbox,
    totals,
    dead,
    health,
    refunds,
    checkoutEvents,
    lastHour,
    violations,
    again,
    retrying,
    workers,
  ] = await Promise.all([
    // 10 oldest rows: the overview summarises, the outbox page lists.
    outboxAges(sql, sandboxId, 10),
    closure(sql, sandboxId),
    deadLettersBySubscriber(sql, sandboxId),
    receiverHealth(sql, sandboxId),
    refundsDue(sql, sandboxId),
    undeliveredCheckoutEvents(sql, sandboxId),
    receiverStats(sql, sandboxId),
    orderViolations(sql, sandboxId, { limit: 1 }),
    republished(sql, sandboxId),
    retryingDeliveries(sql, sandboxId),
    workerCounts(sql, sandboxId),
  ]);
  return {
    outbox,
    closure: totals,
    deadLetters: dead,
    receivers: health,
    refunds,
    checkoutEvents,
    lastHour,
    orderViolations: { total: violations.total },
    republished: again,
    retryingDeliveries: retrying,
    workers,
  };
}
