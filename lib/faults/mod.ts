/**
 * Fault switches: named, per sandbox, stored in `platform.faults` and read at
 * run time by the relay, the consumers and the receivers. A switch is a real
 * branch in the running code, not a patch applied by a test.
 */
import type { Sql } from "../db/connect.ts";

/** The switches each sandbox has on: sandbox id -> names. */
export type ActiveFaults = Map<string, Set<string>>;

/** Reads the switches that are on for some sandboxes. */
export type FaultReader = (sandboxIds: string[]) => Promise<ActiveFaults>;

/**
 * Reads switches from `platform.faults`. The table is small and almost always
 * holds no enabled row, so the common case is one index probe returning
 * nothing.
 */
export function pgFaults(sql: Sql): FaultReader {
  return async (sandboxIds) => {
    const active: ActiveFaults = new Map();
    if (sandboxIds.length === 0) return active;
    const rows = await sql<{ sandbox_id: string; name: string }[]>`
      select sandbox_id, name from platform.faults
       where enabled and sandbox_id = any(${sandboxIds}::uuid[])`;
    for (const { sandbox_id, name } of rows) {
      let set = active.get(sandbox_id);
      if (!set) active.set(sandbox_id, set = new Set());
      set.add(name);
    }
    return active;
  };
}

/** A reader with no switch on, for code paths that run without faults. */
export const noFaults: FaultReader = () => Promise.resolve(new Map());

/** True when `name` is on for `sandboxId`. */
export function isOn(active: ActiveFaults, sandboxId: string, name: string) {
  return active.get(sandboxId)?.has(name) ?? false;
}

/** Turns a switch on or off for one sandbox. */
export async function setFault(
  sql: Sql,
  sandboxId: string,
  name: string,
  enabled: boolean,
) {
  await sql`
    insert into platform.faults (sandbox_id, name, enabled)
    values (${sandboxId}, ${name}, ${enabled})
    on conflict (sandbox_id, name)
    do update set enabled = excluded.enabled, updated_at = now()`;
}
