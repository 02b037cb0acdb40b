/**
 * Redrives over JetStream, and deliveries the broker lost (loops.ts marks
 * them the same way, counting `republishes` instead of `redrives`). A redrive makes the dead delivery pending in
 * PostgreSQL and marks it for republishing (lib/ledger/dead_letters.ts), in
 * one transaction; this loop then gives the broker the stored envelope again,
 * on the lane of that delivery's subscriber and tenant only (the other
 * receivers do not see it again; lanes.ts), under a fresh broker id (`<message>.<subscriber>.
 * redrive.<n>`, which the duplicate window never swallows) with the
 * envelope's message id unchanged (the receiver's inbox knows it). The mark
 * works as an outbox: claimed with a lease, cleared once the PubAck came
 * unless a later redrive marked it again; a crash in between publishes
 * again, and the broker id makes that one copy.
 *
 * A mark whose message has no row in queue.messages cannot be published:
 * the envelope is there alone. The consumers write that row with the
 * delivery (deliveries_sql.ts), so only a delivery made before they did
 * lacks it, or one whose broker message had no `Outbox-Source`. Such a
 * mark is claimed like any other and left under its claim's lease, with a
 * warning: it goes behind the marks due meanwhile, and is tried again once
 * the lease runs out (a relay that stores the message late publishes it
 * then). Without that, it stayed due and unpublished, the loop went again
 * at once, and 100 of them filled every round.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { Sql } from "../../db/connect.ts";
import type { Logger } from "../../log/mod.ts";
import type { Envelope } from "../../outbox/envelope.ts";
import type { TickResult } from "../../wake/loop.ts";
import { SOURCE_HEADER } from "./queue.ts";
import type { StreamNames } from "./stream.ts";
import { type Lanes, ringAll } from "./lanes.ts";
import {
  claimMarks,
  clearMarks,
  type MarkRow,
  nextMarkAt,
} from "../../ledger/republish_marks_sql.ts";

export interface RepublishOptions {
  sql: Sql;
  js: JetStreamClient;
  names: StreamNames;
  lanes: Lanes;
  /** How long a claim holds a mark (default 30 s). */
  leaseMs?: number;
  /** Marks per round (default 100). */
  batch?: number;
  /** Where a mark that cannot be published is told of. */
  log?: Logger;
}

type Publishable = MarkRow & { source: string; envelope: Envelope };

/** One round: claim due marks, publish, clear. */
export async function republishOnce(
  options: RepublishOptions,
): Promise<TickResult> {
  const { sql, js, names, lanes } = options;
  const batch = options.batch ?? 100;
  const leaseMs = options.leaseMs ?? 30_000;
  const claimed = await claimMarks(sql, { batch, leaseMs });
  if (claimed.length === 0) {
    return { more: false, nextDueAt: await nextMarkAt(sql) };
  }
  // Published in the order each aggregate's messages were written: one
  // connection keeps its publishes in order, so each lane's stream does
  // too, and an aggregate's messages redriven together reach the receiver
  // in the order they were written.
  const marks = claimed.filter((m): m is Publishable => m.envelope !== null)
    .sort((a, b) =>
      a.envelope.aggregateId.localeCompare(b.envelope.aggregateId) ||
      a.envelope.aggregateVersion - b.envelope.aggregateVersion ||
      Number(a.id) - Number(b.id)
    );
  const missing = claimed.filter((m) => m.envelope === null);
  if (missing.length > 0) {
    options.log?.warn("broker_republish_without_message", {
      deliveries: missing.map((m) => Number(m.id)),
      retryInMs: leaseMs,
      reason:
        "the message has no row in queue.messages: its envelope is not stored",
    });
  }
  const more = claimed.length === batch;
  if (marks.length === 0) return { more };
  await lanes.ensure(
    marks.map((m) => ({ subscriber: m.subscriber, tenantId: m.tenant_id })),
  );
  const acks = await Promise.all(marks.map((m) => {
    const h = headers();
    h.set(SOURCE_HEADER, m.source);
    if (m.envelope.traceparent) h.set("traceparent", m.envelope.traceparent);
    return js.publish(
      names.subject(m.subscriber, m.tenant_id, m.envelope.type),
      JSON.stringify(m.envelope),
      {
        msgID: names.messageId(
          m.message_id,
          m.subscriber,
          m.redrives,
          m.republishes,
        ),
        headers: h,
      },
    );
  }));
  ringAll(
    lanes,
    marks.map((m, i) => ({
      subscriber: m.subscriber,
      tenantId: m.tenant_id,
      seq: acks[i].seq,
    })),
  );
  await clearMarks(sql, marks);
  return {
    more,
    touched: [...new Set(marks.map((m) => m.tenant_id))],
  };
}
