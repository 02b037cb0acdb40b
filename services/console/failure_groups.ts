/**
 * The failure groups for the console's dead-letters page and its twin
 * (`GET /api/console/failure-groups`): lib/queue's groups of the sandbox's
 * dead letters (by subscriber, event type and error pattern), parsed
 * against the contract before they leave.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { failureGroups } from "../../lib/queue/mod.ts";
import {
  type FailureGroupsData,
  failureGroupsDataSchema,
} from "./contracts.ts";

export type { FailureGroup, FailureGroupsData } from "./contracts.ts";

/** The sandbox's failure groups, largest first. */
export async function failureGroupsData(
  sql: Sql,
  sandboxId: string,
): Promise<FailureGroupsData> {
  return failureGroupsDataSchema.parse({
    groups: await failureGroups(sql, sandboxId),
  });
}
