/**
 * Fault switches: named, per tenant, stored in `platform.faults`, and read
 * at run time by the decorators of this folder, which wrap the transport,
 * the dispatcher and the receivers' handlers.
 */
import type { Fragment, Sql, TxSql } from "../db/connect.ts";
import { isTenantClosedError, TenantClosed } from "../db/closed.ts";
import { inPlatform } from "../db/names.ts";

/** The switches each tenant has on: tenant id -> names. */
export type ActiveFaults = Map<string, Set<string>>;

/** Reads the switches that are on. */
export interface FaultReader {
  /** The switches that are on for these tenants. */
  (tenantIds: string[]): Promise<ActiveFaults>;
  /** Every tenant that has one of `names` on. */
  tenantsWith(names: readonly string[]): Promise<string[]>;
  /**
   * The same, as a subquery for a statement of the caller's. Read in that
   * statement's snapshot, it sees every switch turned on before the rows
   * the statement reads were written; a list read beforehand may not.
   */
  tenantsWithQuery(sql: TxSql, names: readonly string[]): Fragment;
}

/** The cache of one pool: every enabled switch, and when it was read. */
interface Cache {
  active: ActiveFaults;
  readAt: number;
  /** Bumped by setFault: a read that started before is not kept. */
  generation: number;
  loading?: Promise<void>;
}

const caches = new WeakMap<Sql, Cache>();

async function loadAll(sql: Sql): Promise<ActiveFaults> {
  const active: ActiveFaults = new Map();
  const rows = await sql<{ tenant_id: string; name: string }[]>`
    select tenant_id, name from ${sql(inPlatform("faults"))} where enabled`;
  for (const { tenant_id, name } of rows) {
    let set = active.get(tenant_id);
    if (!set) active.set(tenant_id, set = new Set());
    set.add(name);
  }
  return active;
}

async function refresh(sql: Sql, cache: Cache) {
  for (;;) {
    const generation = cache.generation;
    const active = await loadAll(sql);
    if (generation === cache.generation) {
      cache.active = active;
      cache.readAt = Date.now();
      return;
    }
  }
}

/**
 * Reads switches from `platform.faults`, through a per-pool cache of every
 * enabled switch (a handful of rows, usually none) refreshed at most every
 * `ttlMs`: the consumers and receivers ask for every delivery, and a query
 * each time cost a tenth of a delivery's round trips. `setFault` on the same
 * pool clears the cache at once; a switch flipped by another process is seen
 * within `ttlMs`.
 */
export function pgFaults(sql: Sql, ttlMs = 250): FaultReader {
  const current = async (): Promise<ActiveFaults> => {
    let cache = caches.get(sql);
    if (!cache) {
      caches.set(sql, cache = { active: new Map(), readAt: 0, generation: 0 });
    }
    if (Date.now() - cache.readAt > ttlMs) {
      const c = cache;
      c.loading ??= refresh(sql, c).finally(() => c.loading = undefined);
      await c.loading;
    }
    return cache.active;
  };
  const read = async (tenantIds: string[]) => {
    const active = await current();
    const out: ActiveFaults = new Map();
    for (const id of tenantIds) {
      const set = active.get(id);
      if (set) out.set(id, set);
    }
    return out;
  };
  return Object.assign(read, {
    tenantsWith: async (names: readonly string[]) => {
      const out: string[] = [];
      for (const [id, set] of await current()) {
        if (names.some((name) => set.has(name))) out.push(id);
      }
      return out;
    },
    tenantsWithQuery: (sql: TxSql, names: readonly string[]) =>
      sql`select tenant_id from ${sql(inPlatform("faults"))}
           where enabled and name = any(${names as string[]})`,
  });
}

/** True when `name` is on for `tenantId`. */
export function isOn(active: ActiveFaults, tenantId: string, name: string) {
  return active.get(tenantId)?.has(name) ?? false;
}

/**
 * Turns a switch on or off for one tenant; {@link TenantClosed} once the
 * tenant's wipe has begun (the gate of lib/db/service.ts, in the insert).
 */
export async function setFault(
  sql: Sql,
  tenantId: string,
  name: string,
  enabled: boolean,
) {
  try {
    await sql`
      insert into ${sql(inPlatform("faults"))} (tenant_id, name, enabled)
      select ${tenantId}::uuid, ${name}::text, ${enabled}::boolean
       where ${sql(inPlatform("enter_tenant"))}(${tenantId}::uuid)
      on conflict (tenant_id, name)
      do update set enabled = excluded.enabled, updated_at = now()`;
  } catch (error) {
    if (!isTenantClosedError(error)) throw error;
    throw new TenantClosed(tenantId, "faults", { cause: error });
  }
  const cache = caches.get(sql);
  if (cache) {
    cache.generation++;
    cache.readAt = 0;
  }
}
