/**
 * What the console's overview shows, for its page and its twin
 * (`GET /api/console/overview`): outbox ages, closure, dead letters per
 * receiver, receiver health, payments needing a refund, test-checkout
 * events the webhook has not taken, the last hour per
 * receiver (its charts) and how many order violations there are.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { outboxAges } from "./outbox.ts";
import { closure } from "./closure.ts";
import { deadLettersBySubscriber, receiverHealth } from "./deliveries.ts";
import { refundsDue } from "./refunds.ts";
import { undeliveredCheckoutEvents } from "./checkout_events.ts";
import { receiverStats } from "./receivers.ts";
import { orderViolations } from "./violations.ts";

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
  };
}
