/**
 * The PostgreSQL transport: tables in the `queue` schema. A publish stores
 * the messages and fans each out into one pending delivery per subscriber,
 * in one statement; a message id the queue already has is ignored, with its
 * deliveries: publishing twice is harmless, which is what lets the relay
 * publish first and mark second. Because the queue shares the outboxes'
 * database, the relay may also move rows into it in one transaction
 * (lib/carriers/postgres/move.ts).
 */
import type { Sql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import { QUEUE_CHANNEL } from "./channel.ts";
import type { OutgoingMessage, Queue, Routing } from "./queue.ts";
import { messagesAndDeliveries, routesOf } from "./store_sql.ts";
import { inPlatform } from "../db/names.ts";

export class Ledger implements Queue {
  constructor(readonly sql: Sql, readonly routing: Routing) {}

  async publish(messages: OutgoingMessage[]): Promise<number> {
    return await this.store(messages, { notify: true });
  }

  /**
   * Stores messages and their deliveries (pending), ignoring message ids the
   * queue has already; with `notify`, wakes the consumers that LISTEN. The
   * JetStream transport keeps its deliveries' rows with it, without waking
   * anyone: the broker carries the messages.
   *
   * A message of a tenant whose wipe has begun is not stored, and a row of
   * `platform.closed_refusals` says so: the relay that publishes it claimed
   * it before the wipe began, and may publish after the wipe has ended.
   */
  async store(
    messages: OutgoingMessage[],
    options: { notify: boolean },
  ): Promise<number> {
    if (messages.length === 0) return 0;
    const routes = routesOf(
      this.routing,
      new Set(messages.map((m) => m.envelope.type)),
    );
    const e = messages.map((m) => m.envelope);
    return await asBookkeeper(this.sql, "queue", async ({ sql }) => {
      const closed = sql(inPlatform("tenant_closed"));
      const [{ count }] = await sql<{ count: number }[]>`
        with x as (
          select x.source, x.e, x.n, (x.e->>'messageId')::uuid as message_id,
                 t.tenant_id, ${closed}(t.tenant_id) as closed
            from unnest(
              ${messages.map((m) => m.source)}::text[],
              array(select v from jsonb_array_elements(${sql.json(e as never)})
                    with ordinality as t(v, n) order by n)
            ) with ordinality as x(source, e, n),
            -- Version 1 envelopes name the tenant sandboxId.
            lateral (select coalesce(x.e->>'tenantId',
                                     x.e->>'sandboxId')::uuid as tenant_id) t
        ), refused as (
          insert into ${sql(inPlatform("closed_refusals"))}
            (tenant_id, refused_by, what, key, reason)
          select tenant_id, 'queue', 'message',
                 message_id::text, 'published after the tenant''s wipe began'
            from x where closed
        ), ${
        messagesAndDeliveries(
          sql,
          routes,
          sql`
            select message_id, tenant_id, source,
                   e->>'type' as type, e->>'aggregateId' as aggregate_id,
                   e as envelope, n as position
              from x where not closed`,
          { repeats: true },
        )
      }
        select count(*)::int as count from m`;
      if (count > 0 && options.notify) {
        await sql`select pg_notify(${QUEUE_CHANNEL}, '')`;
      }
      return count;
    });
  }
}
