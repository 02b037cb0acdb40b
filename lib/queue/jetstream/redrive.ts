/**
 * Redrives over JetStream, and deliveries the broker lost (loops.ts marks
 * them the same way, counting `republishes` instead of `redrives`). A redrive makes the dead delivery pending in
 * PostgreSQL and marks it for republishing (lib/queue/dead_letters.ts), in
 * one transaction; this loop then gives the broker the stored envelope again,
 * on the lane of that delivery's subscriber and tenant only (the other
 * receivers do not see it again; lanes.ts), under a fresh broker id (`<message>.<subscriber>.
 * redrive.<n>`, which the duplicate window never swallows) with the
 * envelope's message id unchanged (the receiver's inbox knows it). The mark
 * works as an outbox: claimed with a lease, cleared once the PubAck came
 * unless a later redrive marked it again; a crash in between publishes
 * again, and the broker id makes that one copy.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { Sql } from "../../db/connect.ts";
import { bookkeepingStatement } from "../../db/service.ts";
import type { Envelope } from "../../outbox/envelope.ts";
import type { TickResult } from "../../wake/loop.ts";
import { SOURCE_HEADER } from "./queue.ts";
import type { StreamNames } from "./stream.ts";
import { type Lanes, ringAll } from "./lanes.ts";
import { inQueue } from "../../db/names.ts";
import { notWiping } from "../../db/closed.ts";

export interface RepublishOptions {
  sql: Sql;
  js: JetStreamClient;
  names: StreamNames;
  lanes: Lanes;
  /** How long a claim holds a mark (default 30 s). */
  leaseMs?: number;
  /** Marks per round (default 100). */
  batch?: number;
}

interface MarkRow {
  id: string;
  tenant_id: string;
  message_id: string;
  subscriber: string;
  redrives: number;
  republishes: number;
  source: string;
  envelope: Envelope;
}

/** One round: claim due marks, publish, clear. */
export async function republishOnce(
  options: RepublishOptions,
): Promise<TickResult> {
  const { sql, js, names, lanes } = options;
  const batch = options.batch ?? 100;
  const leaseMs = options.leaseMs ?? 30_000;
  const marks = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql<MarkRow[]>`
      with due as (
        -- Not for a tenant being wiped: the broker is purged of it.
        select id from ${sql(inQueue("deliveries"))}
         where republish_at <= now()
           and ${notWiping(sql, "tenant_id")}
         order by republish_at
         limit ${batch}
         for update skip locked
      )
      update ${sql(inQueue("deliveries"))} d
         set republish_at = now() + ${leaseMs} * interval '1 millisecond'
        from due, ${sql(inQueue("messages"))} m
       where d.id = due.id and m.message_id = d.message_id
      returning d.id, d.tenant_id, d.message_id, d.subscriber, d.redrives,
                d.republishes, m.source, m.envelope`,
  );
  if (marks.length === 0) {
    const [next] = await bookkeepingStatement(
      sql,
      "queue",
      ({ sql }) =>
        sql<{ at: Date | null }[]>`
        select min(republish_at) as at from ${sql(inQueue("deliveries"))}
         where republish_at is not null
           and ${notWiping(sql, "tenant_id")}`,
    );
    return { more: false, nextDueAt: next?.at ?? undefined };
  }
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
  // Fenced by the copy published: a redrive or a republish marked
  // meanwhile (a higher count) keeps its mark, for the next round.
  await bookkeepingStatement(sql, "queue", ({ sql }) =>
    sql`
      update ${sql(inQueue("deliveries"))} d set republish_at = null
        from unnest(${marks.map((m) => m.id)}::bigint[],
                    ${marks.map((m) => m.redrives)}::int[],
                    ${marks.map((m) => m.republishes)}::int[])
             as p(id, redrives, republishes)
       where d.id = p.id and d.redrives = p.redrives
         and d.republishes = p.republishes`);
  return {
    more: marks.length === batch,
    touched: [...new Set(marks.map((m) => m.tenant_id))],
  };
}
