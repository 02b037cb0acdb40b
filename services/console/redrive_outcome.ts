/**
 * What became of redriven dead letters, as the console reports it after a
 * redrive (`GET /api/console/redrive-outcome?ids=`, and a redrive job's
 * `outcome`): applied, still retrying, or dead again with the receiver's
 * answer. A redrive only sends a message again; whether it worked is the
 * receiver's to say, so the console follows the deliveries until none is
 * retrying instead of reporting a success it has not seen.
 */
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { isRouted } from "../../lib/db/service.ts";
import {
  type EarlierDeadLetter,
  type RedriveOutcome,
  redriveOutcome,
} from "../../lib/ledger/mod.ts";
import { queueOfDelivery, readServices } from "../databases.ts";
import {
  redriveOutcomeSchema,
  type RedriveOutcomeView,
  type WaitedOn,
  waitedOnSchema,
} from "./contracts.ts";

/** Outcomes of parts (each queue's) as one. */
export function mergeOutcomes(parts: RedriveOutcome[]): RedriveOutcome {
  return {
    applied: parts.reduce((n, p) => n + p.applied, 0),
    retrying: parts.reduce((n, p) => n + p.retrying, 0),
    deadAgain: parts.flatMap((p) => p.deadAgain).sort((a, b) => a.id - b.id),
    refused: parts.reduce((n, p) => n + p.refused, 0),
    notRedriven: parts.reduce((n, p) => n + p.notRedriven, 0),
  };
}

/** An outcome as the console's contract has it. */
export function outcomeView(outcome: RedriveOutcome): RedriveOutcomeView {
  return redriveOutcomeSchema.parse({
    applied: outcome.applied,
    retrying: outcome.retrying,
    deadAgain: outcome.deadAgain.map((d) => ({
      id: d.id,
      messageId: d.messageId,
      eventType: d.eventType,
      subscriber: d.subscriber,
      orderId: d.aggregateId,
      lastError: d.lastError,
    })),
    refused: outcome.refused,
    notRedriven: outcome.notRedriven,
    settled: outcome.retrying === 0,
  });
}

/** The outcome of deliveries `ids` of the sandbox; others' are not counted. */
export async function redriveOutcomeOf(
  sql: Sql,
  sandboxId: string,
  ids: readonly number[],
): Promise<RedriveOutcomeView> {
  const routed = isRouted(sql);
  const parts = await readServices(
    sql,
    sandboxId,
    async (at, queues) => {
      const out: RedriveOutcome[] = [];
      // One queue after the other: a snapshot of each, as readServices asks.
      for (const q of queues) {
        const here = routed
          ? ids.filter((id) => queueOfDelivery(id) === q)
          : ids;
        if (here.length) {
          out.push(await at(q, (sql: TxSql) => redriveOutcome(sql, here)));
        }
      }
      return out;
    },
  );
  return outcomeView(mergeOutcomes(parts));
}

/** A dead letter a redrive waits on, as the console's contract has it. */
export function waitedOnView(d: EarlierDeadLetter): WaitedOn {
  return waitedOnSchema.parse({
    id: d.id,
    messageId: d.messageId,
    eventType: d.eventType,
    subscriber: d.subscriber,
    orderId: d.aggregateId,
    lastError: d.lastError,
    deadAt: d.deadAt,
    before: d.before,
  });
}
