/**
 * Queries on a service's outbox for the relay: claim with a lease, delete
 * what was published, and record a failed publish. Each runs in its own transaction as
 * the service, for every tenant; marking and failing are fenced by the lease.
 * And an operator's release of parked rows, in the caller's transaction.
 */
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import type { Envelope } from "./envelope.ts";
import { inPlatform } from "../db/names.ts";
import { notWipingAsService } from "../db/closed.ts";

export interface ClaimedRow {
  id: number;
  tenantId: string;
  envelope: Envelope;
}

export interface ClaimOptions {
  owner: string;
  limit: number;
  leaseMs: number;
  /** Only rows of these tenants. */
  tenantIds?: readonly string[];
  /** Automatic re-arms allowed per tenant and UTC day (default 100). */
  guardLimit?: number;
}

export interface Claimed {
  rows: ClaimedRow[];
  /** Tenants whose taken-over rows were parked by the loop guard. */
  parked: string[];
}

/**
 * Automatic re-arms the loop guard allows per tenant and UTC day, unless
 * the relay is given another limit: a publish that fails every
 * RELAY_RETRY_MS (30 s) uses 100 in under an hour, then the rows wait.
 */
export const GUARD_LIMIT = 100;

/** Why a row taken over and parked by the loop guard waits. */
export const LEASE_RAN_OUT =
  "the relay's lease ran out before it marked the row published";

/**
 * Which rows of an outbox (aliased `o`) a relay takes: those due, and with
 * them what a tenant still owes once it has sent something new. Rows that
 * wait for a retry, or that the loop guard parked, go as soon as their
 * tenant's next message does, oldest first, in the same batch: each new
 * command of a sender also retries what it owes. The relay does this, not
 * the command, so that an order pays for its own row alone
 * (bench/HISTORY.md). The new rows' tenants are looked up only when a
 * waiting row is met, through the retry index.
 */
export function dueOrOwed(sql: TxSql, service: string): Fragment {
  const table = sql(`${service}.outbox`);
  return sql`(o.next_attempt_at <= now()
    or (o.state = 'pending' and o.attempts > 0
        and o.tenant_id = any(array(
          select n.tenant_id from ${table} n
           where n.state = 'pending' and n.attempts = 0
             and n.next_attempt_at <= now()))))`;
}

/**
 * Claims up to `limit` due rows, oldest first, skipping rows that another
 * relay holds. Rows whose lease has expired are due again (the lease expiry
 * is written into next_attempt_at), so a dead relay's rows are taken over.
 * No watermark: a transaction that commits late is claimed when it is seen.
 *
 * The loop guard counts takeovers. A row still claimed when its lease ran
 * out was published, or tried, by a relay that never marked it: it crashed
 * in between, or the "crashes before marking" fault stopped it. Taking it
 * over re-arms it as a failed publish does, so each tenant with such rows
 * spends one re-arm of its daily allowance per claim; over the allowance
 * its taken-over rows are parked instead of claimed (pending, next attempt
 * at infinity, one attempt more so that the service's next command flushes
 * them), and a relay that crashes on every try stops retrying. One
 * statement: the guard costs nothing while no lease runs out.
 */
export async function claimOutbox(
  sql: Sql,
  service: string,
  options: ClaimOptions,
): Promise<Claimed> {
  const { owner, limit, leaseMs, tenantIds } = options;
  const guardLimit = options.guardLimit ?? GUARD_LIMIT;
  const [result] = await asBookkeeper(sql, service, ({ sql }) => {
    const table = sql(`${service}.outbox`);
    const guardTable = sql(`${service}.relay_guard`);
    const only = tenantIds
      ? sql`and tenant_id = any(${tenantIds as string[]}::uuid[])`
      : sql``;
    return sql<{ rows: ClaimedJson[] | null; parked: string[] | null }[]>`
      with due as (
        -- Not the rows of a tenant being wiped (see lib/carriers/postgres/move_sql.ts).
        select id, message_id, tenant_id, state = 'claimed' as taken_over
          from ${table} o
         where ${dueOrOwed(sql, service)} ${only}
           and ${notWipingAsService(sql, "tenant_id")}
         order by id
         limit ${limit}
         for update skip locked
      ), guard as (
        insert into ${guardTable} (tenant_id, day, rearms)
        select distinct tenant_id, (now() at time zone 'utc')::date, 1
          from due where taken_over
        on conflict (tenant_id, day)
        do update set rearms = ${guardTable}.rearms + 1
        returning tenant_id, rearms
      ), over as (
        select due.message_id from due
          join guard on guard.tenant_id = due.tenant_id
         where due.taken_over and guard.rearms > ${guardLimit}
      ), parked as (
        update ${table} o
           set state = 'pending', attempts = attempts + 1,
               last_error = ${LEASE_RAN_OUT},
               next_attempt_at = 'infinity',
               lease_owner = null, lease_expires_at = null
         where o.message_id in (select message_id from over)
        returning o.tenant_id
      ), claimed as (
        update ${table} o
           set state = 'claimed',
               lease_owner = ${owner},
               lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
               next_attempt_at = now() + ${leaseMs} * interval '1 millisecond'
          from due
         where o.message_id = due.message_id
           and due.message_id not in (select message_id from over)
        returning o.id, o.tenant_id, o.envelope
      )
      select (select json_agg(json_build_object('id', id,
                'tenant_id', tenant_id, 'envelope', envelope) order by id)
                from claimed) as rows,
             (select array_agg(distinct tenant_id) from parked) as parked`;
  });
  return {
    rows: (result.rows ?? []).map((r) => ({
      id: Number(r.id),
      tenantId: r.tenant_id,
      envelope: r.envelope,
    })),
    parked: result.parked ?? [],
  };
}

/** A claimed row as the claim statement returns it. */
interface ClaimedJson {
  id: number;
  tenant_id: string;
  envelope: Envelope;
}

/**
 * Deletes the rows of published messages, owed no more; only rows still
 * leased by `owner` go. The transport holds the message's durable copy:
 * queue.messages, where the publish stored it (both transports do).
 */
export async function markPublished(
  sql: Sql,
  service: string,
  owner: string,
  messageIds: string[],
): Promise<number> {
  if (messageIds.length === 0) return 0;
  return await asBookkeeper(sql, service, async ({ sql }) => {
    const rows = await sql`
      delete from ${sql(`${service}.outbox`)}
       where message_id = any(${messageIds}::uuid[])
         and lease_owner = ${owner} and state = 'claimed'
      returning id`;
    return rows.length;
  });
}

export interface FailedPublish {
  messageIds: string[];
  tenantIds: string[];
  error: string;
  retryMs: number;
  /** Automatic re-arms allowed per tenant and UTC day. */
  guardLimit: number;
}

/**
 * Records a failed publish: the rows stay, attempts + 1, the error kept, the
 * next attempt set. Each affected tenant spends one re-arm of its daily
 * allowance; a tenant over the allowance gets its rows parked (next attempt
 * at infinity) until the service's next command flushes them or an operator
 * releases them ({@link releaseParkedIn}).
 * Returns the tenants whose rows were parked.
 */
export async function failPublish(
  sql: Sql,
  service: string,
  owner: string,
  failed: FailedPublish,
): Promise<string[]> {
  if (failed.messageIds.length === 0) return [];
  return await asBookkeeper(sql, service, async ({ sql }) => {
    const tenants = [...new Set(failed.tenantIds)];
    const guard = await sql<{ tenant_id: string; rearms: number }[]>`
      insert into ${sql(`${service}.relay_guard`)} (tenant_id, day, rearms)
      select s, (now() at time zone 'utc')::date, 1
        from unnest(${tenants}::uuid[]) as s
       -- A publish that failed after the tenant's wipe began counts
       -- nothing: the wipe may have deleted its guard row already.
       where not ${sql(inPlatform("tenant_closed"))}(s)
      on conflict (tenant_id, day)
      do update set rearms = ${sql(`${service}.relay_guard`)}.rearms + 1
      returning tenant_id, rearms`;
    const parked = guard.filter((g) => g.rearms > failed.guardLimit)
      .map((g) => g.tenant_id);
    await sql`
      update ${sql(`${service}.outbox`)}
         set state = 'pending',
             attempts = attempts + 1,
             last_error = ${failed.error},
             next_attempt_at = case when tenant_id = any(${parked}::uuid[])
               then 'infinity'::timestamptz
               else now() + ${failed.retryMs} * interval '1 millisecond' end,
             lease_owner = null, lease_expires_at = null
       where message_id = any(${failed.messageIds}::uuid[])
         and lease_owner = ${owner} and state = 'claimed'`;
    return parked;
  });
}

/** When the earliest waiting row becomes due (null when none waits). */
export async function nextOutboxDue(
  sql: Sql,
  service: string,
): Promise<Date | null> {
  const [row] = await asBookkeeper(
    sql,
    service,
    ({ sql }) =>
      sql<{ at: Date | null }[]>`
      select min(next_attempt_at) as at from ${sql(`${service}.outbox`)}
       where next_attempt_at < 'infinity'
         and ${notWipingAsService(sql, "tenant_id")}`,
  );
  return row.at;
}

/** Which parked rows an operator releases; unset fields match every row. */
export interface ParkedTarget {
  /** The row of this message only. */
  messageId?: string;
  /** Rows of this event type only. */
  type?: string;
}

/**
 * Makes the parked rows of `service`'s outbox that match `target` due now,
 * in the caller's transaction, whose role may update the outbox (the relay)
 * and whose tenant policy decides whose rows it sees. Fenced: only rows
 * still parked change, so a row that a command flushed meanwhile, or that
 * was published (and so deleted), is not counted. Attempts and the last error stay, so the
 * row still says why it waited; should the publish fail again, the guard,
 * whose allowance for the day is still used up, parks it again at once.
 * Returns how many rows it released.
 */
export async function releaseParkedIn(
  sql: TxSql,
  service: string,
  target: ParkedTarget = {},
): Promise<number> {
  const { messageId, type } = target;
  // `attempts > 0` names the outbox_retry index's predicate: a parked row
  // has had at least one attempt (parking counts one), and the index holds
  // only rows that wait, usually none.
  const rows = await sql`
    update ${sql(`${service}.outbox`)}
       set next_attempt_at = now()
     where state = 'pending' and attempts > 0
       and next_attempt_at = 'infinity'
       ${
    messageId === undefined ? sql`` : sql`and message_id = ${messageId}::uuid`
  }
       ${type === undefined ? sql`` : sql`and type = ${type}`}
    returning id`;
  return rows.length;
}
