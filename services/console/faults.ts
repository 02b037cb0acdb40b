/** The console's fault switches: read all, set some, per sandbox. */
import type { Sql } from "../../lib/db/connect.ts";
import { setFault } from "../../lib/faults/mod.ts";
import { FAULT_NAMES } from "../faults.ts";
import { type FaultsData, faultsDataSchema } from "./contracts.ts";

/** Every fault switch of the sandbox, on or off (off when never set). */
export async function readFaults(
  sql: Sql,
  sandboxId: string,
): Promise<FaultsData> {
  const rows = await sql<{ name: string; enabled: boolean }[]>`
    select name, enabled from platform.faults where tenant_id = ${sandboxId}`;
  const on = new Map(rows.map((r) => [r.name, r.enabled]));
  return faultsDataSchema.parse(Object.fromEntries(
    FAULT_NAMES.map((name) => [name, on.get(name) ?? false]),
  ));
}

/** Sets the switches in `changes`; answers with all of them. */
export async function writeFaults(
  sql: Sql,
  sandboxId: string,
  changes: Record<string, boolean>,
): Promise<FaultsData> {
  for (const [name, enabled] of Object.entries(changes)) {
    await setFault(sql, sandboxId, name, enabled);
  }
  return await readFaults(sql, sandboxId);
}
