/**
 * The workers' heartbeat rows (`queue.workers`, lib/ledger/migrations/
 * 0003_workers.sql): what a running process of relays or consumers says of
 * itself every beat, and what an operator's reader makes of them. A worker
 * is live while its last beat is younger than three of its own beats, and
 * silent after: three, so that one slow beat (a busy database, a long
 * garbage collection) is not taken for a death.
 */
import type { Sql, TxSql } from "../db/connect.ts";
import { asBookkeeper } from "../db/service.ts";
import { inQueue } from "../db/names.ts";

/** Beats a worker may miss before it counts as silent. */
export const SILENT_AFTER_BEATS = 3;

/**
 * Beats after which a silent worker's row is deleted by another worker's
 * beat: long enough for an operator to see which process died (8 min 20 s
 * at the default 5 s beat), short enough that the list does not fill with
 * every restart of a week.
 */
export const FORGOTTEN_AFTER_BEATS = 100;

/** What a worker writes of itself at each beat. */
export interface WorkerBeat {
  id: string;
  host: string;
  pid: number;
  roles: readonly ("relay" | "consume")[];
  transport: string;
  version: string;
  beatMs: number;
  lastClaimAt: Date | null;
}

/** A worker as a reader sees it now. */
export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  roles: ("relay" | "consume")[];
  transport: string;
  version: string;
  state: "live" | "silent";
  /**
   * Leases held at its last beat, while they last: 0 once the latest of
   * them has expired, when other workers may take its rows over.
   */
  leases: number;
  leasesUntil: Date | null;
  lastClaimAt: Date | null;
  lastBeatAt: Date;
  startedAt: Date;
  beatMs: number;
  /** When it turned silent (its last beat plus three beats), if it has. */
  silentSince: Date | null;
}

/**
 * The deliveries `owner` holds now, and the latest of their expiries. A
 * consumer's lease owner is `<owner>#<n>` (one per batch).
 */
async function deliveryLeases(
  sql: TxSql,
  owner: string,
): Promise<{ n: number; until: Date | null }> {
  const [row] = await sql<{ n: number; until: Date | null }[]>`
    select count(*)::int as n, max(lease_expires_at) as until
      from ${sql(inQueue("deliveries"))}
     where state = 'in_flight' and lease_expires_at > now()
       and (lease_owner = ${owner} or lease_owner like ${`${owner}#%`})`;
  return row;
}

/**
 * Writes one beat: the row of `beat` made or brought up to date, with the
 * leases it holds on deliveries plus `outboxLeases` (counted by the
 * outbox's own statements). Also deletes rows silent for
 * {@link FORGOTTEN_AFTER_BEATS} of their own beats.
 */
export async function writeBeat(
  sql: Sql,
  beat: WorkerBeat,
  outboxLeases: { n: number; until: Date | null },
): Promise<void> {
  await asBookkeeper(sql, "queue", async ({ sql }) => {
    const held = await deliveryLeases(sql, beat.id);
    const n = held.n + outboxLeases.n;
    const until = [held.until, outboxLeases.until]
      .filter((d): d is Date => d !== null)
      .sort((a, b) => +b - +a)[0] ?? null;
    const table = sql(inQueue("workers"));
    await sql`
      insert into ${table} (id, host, pid, roles, transport, version,
                            leases, leases_until, last_claim_at, beat_ms)
      values (${beat.id}, ${beat.host}, ${beat.pid},
              ${beat.roles as string[]}::text[], ${beat.transport},
              ${beat.version}, ${n}, ${until},
              -- Leases held now are a claim seen now.
              case when ${n} > 0 then now()
                   else ${beat.lastClaimAt}::timestamptz end,
              ${beat.beatMs})
      on conflict (id) do update
        set leases = excluded.leases, leases_until = excluded.leases_until,
            last_claim_at = greatest(excluded.last_claim_at,
                                     ${table}.last_claim_at),
            beat_ms = excluded.beat_ms, last_beat_at = now()`;
    await sql`
      delete from ${table}
       where last_beat_at
             < now() - beat_ms * ${FORGOTTEN_AFTER_BEATS} * interval '1 ms'`;
  });
}

/** Deletes the row of a worker that stops cleanly: it leaves the list. */
export async function leaveWorkers(sql: Sql, id: string): Promise<void> {
  await asBookkeeper(sql, "queue", async ({ sql }) => {
    await sql`delete from ${sql(inQueue("workers"))} where id = ${id}`;
  });
}

/**
 * Every worker of this database, live ones first, then by host and pid,
 * judged by the database's clock (the one that wrote the beats).
 */
export async function readWorkers(sql: TxSql): Promise<WorkerRow[]> {
  return await sql<WorkerRow[]>`
    select id, host, pid, roles, transport, version,
           case when last_beat_at >= now() - ${SILENT_AFTER_BEATS}
                  * beat_ms * interval '1 ms'
                then 'live' else 'silent' end as state,
           case when leases_until > now() then leases else 0 end as leases,
           case when leases_until > now() then leases_until end
             as "leasesUntil",
           last_claim_at as "lastClaimAt", last_beat_at as "lastBeatAt",
           started_at as "startedAt", beat_ms as "beatMs",
           case when last_beat_at < now() - ${SILENT_AFTER_BEATS}
                  * beat_ms * interval '1 ms'
                then last_beat_at + ${SILENT_AFTER_BEATS}
                  * beat_ms * interval '1 ms' end as "silentSince"
      from ${sql(inQueue("workers"))}
     order by last_beat_at < now() - ${SILENT_AFTER_BEATS}
                * beat_ms * interval '1 ms', host, pid, id`;
}

/**
 * Rows of one worker read from several ledgers (a process that beats into
 * each database it works) as one: silent if any ledger stopped hearing it,
 * with the oldest beat and the leases of all. Live ones first, then by
 * host and pid.
 */
export function mergeWorkers(rows: readonly WorkerRow[]): WorkerRow[] {
  const byId = new Map<string, WorkerRow>();
  const latest = (a: Date | null, b: Date | null) =>
    a === null || (b !== null && b > a) ? b : a;
  const earliest = (a: Date | null, b: Date | null) =>
    a === null || (b !== null && b < a) ? b : a;
  for (const row of rows) {
    const seen = byId.get(row.id);
    if (!seen) {
      byId.set(row.id, { ...row, roles: [...row.roles] });
      continue;
    }
    seen.state = seen.state === "silent" || row.state === "silent"
      ? "silent"
      : "live";
    seen.leases += row.leases;
    seen.leasesUntil = latest(seen.leasesUntil, row.leasesUntil);
    seen.lastClaimAt = latest(seen.lastClaimAt, row.lastClaimAt);
    seen.lastBeatAt = earliest(seen.lastBeatAt, row.lastBeatAt)!;
    seen.startedAt = earliest(seen.startedAt, row.startedAt)!;
    seen.silentSince = earliest(seen.silentSince, row.silentSince);
    for (const role of row.roles) {
      if (!seen.roles.includes(role)) seen.roles.push(role);
    }
  }
  return [...byId.values()].sort((a, b) =>
    Number(a.state === "silent") - Number(b.state === "silent") ||
    a.host.localeCompare(b.host) || a.pid - b.pid || a.id.localeCompare(b.id)
  );
}
