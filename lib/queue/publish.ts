/**
 * The queue's write side: store messages and fan each out into one delivery
 * per subscriber, in one statement. A message id the queue already has is
 * ignored, with its deliveries: publishing twice is harmless, which is what
 * lets the relay publish first and mark second.
 */
import type { Sql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";

/** Event type -> the subscribers that get it. */
export type Routing = Readonly<Record<string, readonly string[]>>;

export interface OutgoingMessage {
  /** The service whose outbox the message came from. */
  source: string;
  envelope: Envelope;
}

/** What any transport offers the relay. */
export interface Queue {
  /** Publishes a batch; returns how many messages were new to the queue. */
  publish(messages: OutgoingMessage[]): Promise<number>;
}

/** The channel consumers LISTEN on. */
export const QUEUE_CHANNEL = "queue";

/** The PostgreSQL transport: tables in the `queue` schema. */
export class PgQueue implements Queue {
  constructor(readonly sql: Sql, readonly routing: Routing) {}

  async publish(messages: OutgoingMessage[]): Promise<number> {
    if (messages.length === 0) return 0;
    const types = [...new Set(messages.map((m) => m.envelope.type))];
    const routeTypes: string[] = [];
    const routeSubs: string[] = [];
    for (const type of types) {
      for (const subscriber of this.routing[type] ?? []) {
        routeTypes.push(type);
        routeSubs.push(subscriber);
      }
    }
    const e = messages.map((m) => m.envelope);
    return await asBookkeeper(this.sql, "queue", async ({ sql }) => {
      const [{ count }] = await sql<{ count: number }[]>`
        with m as (
          insert into queue.messages
            (message_id, sandbox_id, source, type, aggregate_id, envelope)
          select (x.e->>'messageId')::uuid, (x.e->>'sandboxId')::uuid, x.source,
                 x.e->>'type', x.e->>'aggregateId', x.e
            from unnest(
              ${messages.map((m) => m.source)}::text[],
              array(select v from jsonb_array_elements(${sql.json(e as never)})
                    with ordinality as t(v, n) order by n)
            ) as x(source, e)
          on conflict (message_id) do nothing
          returning message_id, sandbox_id, type, aggregate_id
        ), d as (
          insert into queue.deliveries
            (sandbox_id, message_id, subscriber, type, aggregate_id)
          select m.sandbox_id, m.message_id, r.subscriber, m.type, m.aggregate_id
            from m join unnest(${routeTypes}::text[], ${routeSubs}::text[])
              as r(type, subscriber) on r.type = m.type
           order by m.message_id, r.subscriber
        )
        select count(*)::int as count from m`;
      if (count > 0) await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
      return count;
    });
  }
}
