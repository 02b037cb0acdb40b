/** The console's fault switches: read all, set some, per sandbox. */
import type { Sql } from "../../lib/db/connect.ts";
import { setFault } from "../../lib/faults/mod.ts";
import { asService } from "../../lib/db/service.ts";
import { logAction } from "./actions.ts";
import { FAULT_NAMES } from "../faults.ts";
import { queuePools } from "../databases.ts";
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

/**
 * Sets the switches in `changes`; answers with all of them. In split mode
 * each sender's database keeps a copy, written first, for the relay's
 * move there, which leaves the tenants with a relay fault to the long way
 * in the same statement; the console's own copy is written last, and is
 * the one read.
 */
export async function writeFaults(
  sql: Sql,
  sandboxId: string,
  changes: Record<string, boolean>,
  actor: string,
): Promise<FaultsData> {
  const before = await readFaults(sql, sandboxId);
  const copies = new Set([...queuePools(sql), sql]);
  for (const pool of copies) {
    for (const [name, enabled] of Object.entries(changes)) {
      await setFault(pool, sandboxId, name, enabled);
    }
  }
  // Each switch that flipped is an operator action, in the log beside the
  // first queue (one entry per flip, as one redrive is one entry).
  const flipped = Object.entries(changes).filter(([name, on]) =>
    before[name] !== on
  );
  if (flipped.length > 0) {
    await asService(
      queuePools(sql)[0],
      "queue",
      { tenantId: sandboxId },
      async ({ sql }) => {
        for (const [name, enabled] of flipped) {
          await logAction(sql, sandboxId, {
            actor,
            action: "fault",
            target: { fault: name, enabled },
            count: 1,
          });
        }
      },
    );
  }
  return await readFaults(sql, sandboxId);
}
