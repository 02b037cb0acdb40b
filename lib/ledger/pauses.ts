/**
 * Paused subscribers, per tenant, stored in `queue.pauses`. While a
 * (tenant, subscriber) pair is paused its deliveries wait as they are:
 * pending, not attempted, not counted as failures, never dead. The
 * PostgreSQL queue's claim leaves them (postgres/deliveries_sql.ts), the
 * relay's move hands none of them over (postgres/store_sql.ts), and a
 * JetStream consumer gives their messages back to the broker unattempted
 * (jetstream/consumer.ts). A resume wakes every consumer, in every process.
 *
 * The consumers ask for every claim, so the state is read through a
 * per-pool cache, as the fault switches are (lib/faults/switches.ts).
 */
import type { Sql } from "../db/connect.ts";
import { asService } from "../db/service.ts";
import { QUEUE_CHANNEL } from "./channel.ts";
import type { LaneList } from "./lanes.ts";
import { inQueue } from "../db/names.ts";

/** The paused pairs, as two parallel lists (for unnest in a claim). */
export type PausedLanes = LaneList;

/** Reads the paused pairs. */
export interface PauseReader {
  /** Every paused (tenant, subscriber) pair. */
  (): Promise<PausedLanes>;
  /** True when `subscriber` is paused in `tenantId`. */
  isPaused(tenantId: string, subscriber: string): Promise<boolean>;
  /**
   * The pairs as last read, at once, without waiting for the pool (a read
   * is started when they are older than the cache's ttl): for a caller
   * that must not wait on this pool's connections, as the relay, whose
   * moves have connections of their own. Writes through the same pool show
   * here at once; another process's, within a read.
   */
  known(): PausedLanes;
  /** Drops the cache: the next read goes to the table. */
  forget(): void;
}

/**
 * The payload of the NOTIFY a resume sends on the queue's channel: every
 * listener drops its cache and wakes all of its consumers.
 */
export const RESUME_HINT = "resume";

/** Nothing paused. */
export const NO_PAUSES: PausedLanes = { tenantIds: [], subscribers: [] };

interface Cache {
  lanes: PausedLanes;
  keys: Set<string>;
  readAt: number;
  /** Bumped by a write or `forget`: a read that started before is not kept. */
  generation: number;
  loading?: Promise<void>;
}

const caches = new WeakMap<Sql, Cache>();

const keyOf = (tenantId: string, subscriber: string) =>
  `${tenantId}\u0000${subscriber}`;

function cacheOf(sql: Sql): Cache {
  let cache = caches.get(sql);
  if (!cache) {
    caches.set(
      sql,
      cache = { lanes: NO_PAUSES, keys: new Set(), readAt: 0, generation: 0 },
    );
  }
  return cache;
}

function invalidate(sql: Sql) {
  const cache = caches.get(sql);
  if (cache) {
    cache.generation++;
    cache.readAt = 0;
  }
}

/**
 * After a write through `sql`: its cache shows the pair's new state at
 * once, and is read again at the next wait (a read that started before is
 * dropped).
 */
function written(
  sql: Sql,
  tenantId: string,
  subscriber: string,
  paused: boolean,
) {
  const cache = caches.get(sql);
  if (!cache) return;
  const key = keyOf(tenantId, subscriber);
  const keys = new Set(cache.keys);
  if (paused) keys.add(key);
  else keys.delete(key);
  const lanes: PausedLanes = { tenantIds: [], subscribers: [] };
  for (const k of keys) {
    const [id, name] = k.split("\u0000");
    lanes.tenantIds.push(id);
    lanes.subscribers.push(name);
  }
  cache.keys = keys;
  cache.lanes = lanes;
  invalidate(sql);
}

async function refresh(sql: Sql, cache: Cache) {
  for (;;) {
    const generation = cache.generation;
    const rows = await sql<{ tenant_id: string; subscriber: string }[]>`
      select tenant_id, subscriber from ${sql(inQueue("pauses"))}
        where paused`;
    if (generation !== cache.generation) continue;
    cache.lanes = {
      tenantIds: rows.map((r) => r.tenant_id),
      subscribers: rows.map((r) => r.subscriber),
    };
    cache.keys = new Set(rows.map((r) => keyOf(r.tenant_id, r.subscriber)));
    cache.readAt = Date.now();
    return;
  }
}

/**
 * Reads `queue.pauses` through a per-pool cache of every paused pair
 * (usually none), refreshed at most every `ttlMs`. {@link setPaused} on the
 * same pool clears it at once; another process's change is seen within
 * `ttlMs`, and a resume at once, by its NOTIFY (lib/workers/listen.ts).
 */
export function pgPauses(sql: Sql, ttlMs = 250): PauseReader {
  const load = (cache: Cache): Promise<void> | undefined => {
    if (Date.now() - cache.readAt <= ttlMs) return undefined;
    return cache.loading ??= refresh(sql, cache).finally(() =>
      cache.loading = undefined
    );
  };
  const current = async (): Promise<Cache> => {
    const cache = cacheOf(sql);
    await load(cache);
    return cache;
  };
  return Object.assign(async () => (await current()).lanes, {
    isPaused: async (tenantId: string, subscriber: string) =>
      (await current()).keys.has(keyOf(tenantId, subscriber)),
    known: () => {
      const cache = cacheOf(sql);
      // Its failure is a waiting reader's to see; here the last read stays.
      load(cache)?.catch(() => {});
      return cache.lanes;
    },
    forget: () => invalidate(sql),
  });
}

/** What {@link setPaused} did. */
export interface PauseChange {
  subscriber: string;
  paused: boolean;
  /** False when the pair was in that state already (no audit row then). */
  changed: boolean;
}

/**
 * Pauses or resumes `subscriber` in one tenant, with an audit row of who
 * and when (`queue.pause_actions`) when the state changes, in one
 * transaction. A resume sends {@link RESUME_HINT}, so that every process
 * looks at the waiting deliveries at once.
 */
export async function setPaused(
  sql: Sql,
  tenantId: string,
  subscriber: string,
  paused: boolean,
  actor: string,
): Promise<PauseChange> {
  const changed = await asService(
    sql,
    "queue",
    { tenantId },
    async ({ sql }) => {
      const [row] = await sql<{ changed: boolean }[]>`
        with before as (
          select paused from ${sql(inQueue("pauses"))}
           where tenant_id = ${tenantId} and subscriber = ${subscriber}
           for update
        ), upsert as (
          insert into ${sql(inQueue("pauses"))}
            (tenant_id, subscriber, paused, actor)
          values (${tenantId}, ${subscriber}, ${paused}, ${actor})
          on conflict (tenant_id, subscriber) do update
             set paused = excluded.paused, actor = excluded.actor,
                 updated_at = now()
           where ${sql(inQueue("pauses"))}.paused <> excluded.paused
          returning 1
        ), audit as (
          insert into ${sql(inQueue("pause_actions"))}
            (tenant_id, subscriber, action, actor)
          select ${tenantId}, ${subscriber},
                 ${paused ? "pause" : "resume"}, ${actor}
            from upsert
           -- A first resume of a pair never paused changes nothing.
           where ${paused} or exists (select from before)
          returning 1
        )
        select exists (select from audit) as changed`;
      if (row.changed && !paused) {
        await sql`select pg_notify(${QUEUE_CHANNEL}, ${RESUME_HINT})`;
      }
      return row.changed;
    },
  );
  written(sql, tenantId, subscriber, paused);
  return { subscriber, paused, changed };
}

/** The subscribers paused in `tenantId`, by name. */
export async function pausedSubscribers(
  sql: Sql,
  tenantId: string,
): Promise<string[]> {
  return await asService(sql, "queue", { tenantId }, async ({ sql }) => {
    const rows = await sql<{ subscriber: string }[]>`
      select subscriber from ${sql(inQueue("pauses"))}
       where tenant_id = ${tenantId} and paused
       order by subscriber`;
    return rows.map((r) => r.subscriber);
  });
}
