/**
 * What the console's overview shows, for its page and its twin
 * (`GET /api/console/overview`): outbox ages, closure, dead letters per
 * receiver, receiver health, payments needing a refund, the last hour per
 * receiver (its charts) and how many order violations there are.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { outboxAges } from "./outbox.ts";
import { closure } from "./closure.ts";
import { deadLettersBySubscriber, receiverHealth } from "./deliveries.ts";
import { refundsDue } from "./refunds.ts";
import { receiverStats } from "./receivers.ts";
import { orderViolations } from "./violations.ts";

/** The overview of one sandbox, read in parallel. */
export async function overviewData(sql: Sql, sandboxId: string) {
  const [outbox, totals, dead, health, refunds, lastHour, violations] =
    await Promise.all([
      // 10 oldest rows: the overview summarises, the outbox page lists.
      outboxAges(sql, sandboxId, 10),
      closure(sql, sandboxId),
      deadLettersBySubscriber(sql, sandboxId),
      receiverHealth(sql, sandboxId),
      refundsDue(sql, sandboxId),
      receiverStats(sql, sandboxId),
      orderViolations(sql, sandboxId, { limit: 1 }),
    ]);
  return {
    outbox,
    closure: totals,
    deadLetters: dead,
    receivers: health,
    refunds,
    lastHour,
    orderViolations: { total: violations.total },
  };
}
