/**
 * What the JetStream consumers record in queue.deliveries: the same rows
 * and states as the PostgreSQL queue's consumers, so that the console, the
 * timeline and the closure read one story whichever transport carried it.
 * A broker message stands for one delivery (its message id and subscriber);
 * its AckWait plays the part of the lease.
 */
import type { Sql } from "../db/connect.ts";
import { bookkeepingStatement } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { joined } from "../db/joined.ts";
import {
  type AttemptResult,
  type ClaimedDelivery,
  claimLease,
} from "./delivery.ts";
import { finishDeliveryStates } from "./deliveries_sql.ts";
import type { DeliveryState } from "./states.ts";
import { inPlatform, inQueue } from "../db/names.ts";

/** A broker message taken for a delivery. */
export interface Taken {
  subscriber: string;
  envelope: Envelope;
  /**
   * The message's `Outbox-Source` header (queue.ts): without it, no message
   * row can be written, since every row names its source.
   */
  source?: string;
  /**
   * The envelope as the broker carried it, before the schema read it (a
   * version 1 envelope stays one): what the relay stores. Default:
   * `envelope`.
   */
  body?: unknown;
}

interface StartedRow {
  id: string;
  tenant_id: string;
  message_id: string;
  subscriber: string;
  attempts: number;
  max_attempts: number | null;
}

/**
 * Starts an attempt for each taken message whose delivery is open (pending,
 * or in flight under a lease that JetStream's redelivery says has run out):
 * in flight, leased to `owner`, one attempt more. A delivery with no row yet
 * gets one, and its message gets its row in queue.messages as the relay's
 * store writes it (from the envelope and the `Outbox-Source` header): the
 * relay stores its rows after the PubAcks, so a consumer may take a message
 * first, and a relay that dies in between never stores them. Without the
 * message row, a redrive of the delivery had nothing to publish
 * (redrive.ts). A message of a tenant whose wipe has begun starts nothing: a
 * row of `platform.closed_refusals` says so (the broker may give one late,
 * or again from a lane made again). Returns the deliveries started; a
 * taken message left out is settled (done, dead or refused) and only needs
 * acknowledging.
 */
export async function startDeliveries(
  sql: Sql,
  owner: string,
  leaseMs: number,
  taken: readonly Taken[],
): Promise<ClaimedDelivery[]> {
  if (taken.length === 0) return [];
  // One start is one claim: its rows are leased under a token of its own.
  const lease = claimLease(owner);
  const bodies = taken.map((t) => t.body ?? t.envelope);
  const closed = sql(inPlatform("tenant_closed"));
  const rows = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql<StartedRow[]>`
      with t as (
        select (e->>'messageId')::uuid as message_id,
               tenant_id, s as subscriber, nullif(src, '') as source,
               e as envelope,
               e->>'type' as type, e->>'aggregateId' as aggregate_id,
               ${closed}(tenant_id) as closed
          from unnest(${taken.map((t) => t.subscriber)}::text[],
                      ${taken.map((t) => t.source ?? "")}::text[],
                      array(select v from jsonb_array_elements(
                              ${sql.json(bodies as never)}) as v))
            as x(s, src, e),
          -- Version 1 envelopes name the tenant sandboxId.
          lateral (select coalesce(e->>'tenantId',
                                   e->>'sandboxId')::uuid as tenant_id) v
      ), refused as (
        insert into ${sql(inPlatform("closed_refusals"))}
          (tenant_id, refused_by, what, key, reason)
        select tenant_id, 'queue', 'delivery',
               message_id || '.' || subscriber,
               'taken from the broker after the tenant''s wipe began'
          from t where closed
      ), m as (
        -- The relay's columns (lib/ledger/store_sql.ts); a row it
        -- stored already, or another consumer of the message, stands.
        insert into ${sql(inQueue("messages"))}
          (message_id, tenant_id, source, type, aggregate_id, envelope)
        select distinct on (message_id)
               message_id, tenant_id, source, type, aggregate_id, envelope
          from t where not closed and source is not null
         order by message_id
        on conflict (message_id) do nothing
        returning message_id
      )
      insert into ${sql(inQueue("deliveries"))} as d
        (tenant_id, message_id, subscriber, type, aggregate_id, state,
         lease_owner, lease_expires_at, next_attempt_at, attempts)
      select tenant_id, message_id, subscriber, type, aggregate_id,
             'in_flight', ${lease},
             now() + ${leaseMs} * interval '1 millisecond',
             now() + ${leaseMs} * interval '1 millisecond', 1
        from t where not closed
         -- Every message row before any delivery row, as the relay's store
         -- goes (its deliveries after its messages), each in message id
         -- order: the same keys taken in two orders deadlocked
         -- (lib/carriers/jetstream/queue.ts). A sub-statement of WITH runs
         -- when read; this scalar subquery reads all of m first.
         and (select count(*) from m) >= 0
       order by message_id, subscriber
      on conflict (message_id, subscriber) do update
         set state = 'in_flight',
             lease_owner = excluded.lease_owner,
             lease_expires_at = excluded.lease_expires_at,
             next_attempt_at = excluded.next_attempt_at,
             attempts = d.attempts + 1
       where d.state in ('pending', 'in_flight')
      returning d.id, d.tenant_id, d.message_id, d.subscriber, d.attempts,
                d.max_attempts`,
  );
  const byKey = new Map(
    taken.map((t) => [takenKey(t.envelope.messageId, t.subscriber), t]),
  );
  return rows.map((r) => {
    const t = byKey.get(takenKey(r.message_id, r.subscriber))!;
    return {
      id: Number(r.id),
      tenantId: r.tenant_id,
      messageId: r.message_id,
      subscriber: r.subscriber,
      type: t.envelope.type,
      aggregateId: t.envelope.aggregateId,
      attempt: r.attempts,
      maxAttempts: r.max_attempts,
      envelope: t.envelope,
      lease,
    };
  });
}

/**
 * The lanes (subscriber and tenant) with open deliveries, pending or in
 * flight, stored before `before`, and how many each has. Each lane must
 * have its consumer, or its messages wait for no one (a lane whose consumer
 * the server dropped while no worker ran); and the broker must hold at
 * least as many messages there, or it lost some.
 */
export async function openLanes(
  sql: Sql,
  subscribers: readonly string[],
  before: Date,
): Promise<{ subscriber: string; tenantId: string; open: number }[]> {
  const rows = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql<{ subscriber: string; tenant_id: string; open: number }[]>`
      select subscriber, tenant_id, count(*)::int as open
        from ${sql(inQueue("deliveries"))}
       where state in ('pending', 'in_flight')
         and subscriber = any(${subscribers as string[]}::text[])
         and created_at < ${before}
       group by subscriber, tenant_id`,
  );
  return rows.map((r) => ({
    subscriber: r.subscriber,
    tenantId: r.tenant_id,
    open: r.open,
  }));
}

/**
 * Marks for the republisher (redrive.ts) the open deliveries of `lanes`,
 * where the broker holds fewer messages than the ledger has open: those due
 * for longer than `graceMs` (a message the broker still held would have
 * reached a consumer by then) and not marked already. The broker does not
 * say which messages it lost, so every such delivery of the lane goes again;
 * the receivers' inboxes make a repeat harmless. Returns how many.
 */
export async function markLost(
  sql: Sql,
  lanes: readonly { subscriber: string; tenantId: string }[],
  graceMs: number,
): Promise<number> {
  if (lanes.length === 0) return 0;
  const rows = await bookkeepingStatement(
    sql,
    "queue",
    ({ sql }) =>
      sql`
      update ${sql(inQueue("deliveries"))} d
         set republish_at = now(), republishes = d.republishes + 1
        from unnest(${lanes.map((l) => l.subscriber)}::text[],
                    ${lanes.map((l) => l.tenantId)}::uuid[])
             as l(subscriber, tenant_id)
       where d.subscriber = l.subscriber and d.tenant_id = l.tenant_id
         and d.state in ('pending', 'in_flight')
         and d.next_attempt_at < now() - ${graceMs} * interval '1 millisecond'
         and d.republish_at is null
      returning d.id`,
  );
  return rows.length;
}

/** How consumers record their deliveries' attempts in PostgreSQL. */
export interface DeliveryRecords {
  /** {@link startDeliveries} for this process's owner and lease. */
  start(taken: readonly Taken[]): Promise<ClaimedDelivery[]>;
  /**
   * finishDeliveryStates (deliveries_sql.ts), fenced by leases: the state
   * each delivery still held is left in.
   */
  finish(
    results: readonly AttemptResult[],
  ): Promise<Map<number, DeliveryState>>;
}

const takenKey = (messageId: string, subscriber: string) =>
  `${messageId}\u0000${subscriber}`;

/**
 * The records of one process's consumers, each statement joined across
 * them (lib/db/joined.ts): a lane's burst is a few messages, and each
 * burst recorded on its own cost a start and a finish statement for every
 * four deliveries or so.
 */
export function joinedRecords(
  sql: Sql,
  owner: string,
  leaseMs: number,
): DeliveryRecords {
  const start = joined<Taken, ClaimedDelivery>({
    run: (taken) => startDeliveries(sql, owner, leaseMs, taken),
    itemKey: (t) => takenKey(t.envelope.messageId, t.subscriber),
    resultKey: (d) => takenKey(d.messageId, d.subscriber),
  });
  const finish = joined<AttemptResult, [number, DeliveryState]>({
    // Durable: the broker is acknowledged once this returns. The broker
    // keeps the messages: one released from a hold is published again.
    run: async (results) => [
      ...await finishDeliveryStates(sql, results, {
        durable: true,
        republish: true,
      }),
    ],
    itemKey: (r) => String(r.id),
    resultKey: ([id]) => String(id),
  });
  return {
    start,
    finish: async (results) => new Map(await finish(results)),
  };
}
