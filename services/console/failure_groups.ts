/**
 * The failure groups for the console's dead-letters page and its twin
 * (`GET /api/console/failure-groups`): lib/ledger's groups of the sandbox's
 * dead letters (by subscriber, event type and error pattern), parsed
 * against the contract before they leave.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { type FailureGroup, failureGroups } from "../../lib/ledger/mod.ts";
import { queuePools } from "../databases.ts";
import {
  type FailureGroupsData,
  failureGroupsDataSchema,
} from "./contracts.ts";

export type { FailureGroupsData } from "./contracts.ts";

/**
 * The sandbox's failure groups, largest first. In split mode each queue's
 * groups are read in its own database and the same group's counts added.
 */
export async function failureGroupsData(
  sql: Sql,
  sandboxId: string,
): Promise<FailureGroupsData> {
  const parts = await Promise.all(
    queuePools(sql).map((pool) => failureGroups(pool, sandboxId)),
  );
  if (parts.length === 1) {
    return failureGroupsDataSchema.parse({ groups: parts[0] });
  }
  const groups = new Map<string, FailureGroup>();
  for (const g of parts.flat()) {
    const seen = groups.get(g.key);
    groups.set(
      g.key,
      seen
        ? {
          ...seen,
          count: seen.count + g.count,
          firstDeadAt: [seen.firstDeadAt, g.firstDeadAt].sort()[0],
          lastDeadAt: [seen.lastDeadAt, g.lastDeadAt].sort()[1],
        }
        : g,
    );
  }
  return failureGroupsDataSchema.parse({
    groups: [...groups.values()].sort((a, b) =>
      b.count - a.count || a.firstDeadAt.localeCompare(b.firstDeadAt) ||
      a.key.localeCompare(b.key)
    ),
  });
}
