/**
 * Alerts with a life (migrations/0021_alert_episodes.sql): each reading of
 * the alerts moves the sandbox's episodes between firing, recovering and
 * resolved, and an operator can acknowledge one, which the operator log
 * keeps. `currentAlerts` says what fires by the thresholds alone; this
 * module adds what an operator needs to trust a recovery:
 *
 * | kind           | recovering while                               | resolved when |
 * | -------------- | ---------------------------------------------- | ------------- |
 * | `dead_letters` | under the threshold, redriven ones not applied | none in flight |
 * | `success_rate` | under the rate, but the last attempt succeeded | the last N attempts succeeded (N = ALERT_SUCCESS_MIN_ATTEMPTS), or the rate is back |
 * | `outbox_age`   | (never: an age falls at once)                  | the oldest ready row is young again |
 *
 * A resolved episode stays on the banner for RESOLVED_SHOWN_MINUTES, or
 * until it is acknowledged, so that its end is seen and not just missed.
 */
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { queuePools, readServices } from "../databases.ts";
import { type AlertThresholds, currentAlerts } from "./alerts.ts";
import { logAction } from "./actions.ts";
import {
  type AlertBoard,
  alertBoardSchema,
  type AlertEpisode,
} from "./contracts.ts";

export type { AlertBoard, AlertEpisode } from "./contracts.ts";

/** How long a resolved alert stays on the banner unless acknowledged. */
export const RESOLVED_SHOWN_MINUTES = 10;

type Key = `${string}/${string}`;
const keyOf = (kind: string, subject: string): Key => `${kind}/${subject}`;

/** Per subscriber: redriven deliveries not yet done, and the last attempts. */
async function repairReadings(sql: Sql, sandboxId: string, last: number) {
  return await readServices(sql, sandboxId, async (at, queues) => {
    const parts = await Promise.all(
      queues.map((q) =>
        at(
          q,
          (sql: TxSql) =>
            sql<
              { subscriber: string; redriving: number; outcomes: string[] }[]
            >`
          select s.subscriber,
                 (select count(*)::int from queue.deliveries d
                   where d.subscriber = s.subscriber and d.redrives > 0
                     and d.state in ('pending', 'in_flight')) as redriving,
                 array(select a.outcome from queue.attempt_log a
                        where a.subscriber = s.subscriber
                        order by a.started_at desc limit ${last}) as outcomes
            from (select distinct subscriber from queue.deliveries) s`,
        )
      ),
    );
    const by = new Map<string, { redriving: number; outcomes: string[] }>();
    for (const r of parts.flat()) {
      const seen = by.get(r.subscriber);
      by.set(r.subscriber, {
        redriving: (seen?.redriving ?? 0) + r.redriving,
        // Split mode: each queue's last attempts; their order across
        // queues is lost, so the union must all have succeeded.
        outcomes: [...(seen?.outcomes ?? []), ...r.outcomes],
      });
    }
    return by;
  });
}

/**
 * Reads the alerts, moves the sandbox's episodes, and answers the banner:
 * the open episodes and the recently resolved ones, with the dead letters'
 * total for the side bar's count.
 */
export async function alertBoard(
  sql: Sql,
  sandboxId: string,
  thresholds: AlertThresholds,
): Promise<AlertBoard> {
  const last = Math.max(1, thresholds.ALERT_SUCCESS_MIN_ATTEMPTS);
  const [alerts, repair, deadLetters] = await Promise.all([
    currentAlerts(sql, sandboxId, thresholds),
    repairReadings(sql, sandboxId, last),
    deadLetterTotal(sql, sandboxId),
  ]);
  const now = new Map<
    Key,
    { state: "firing" | "recovering"; a: typeof alerts[number] }
  >();
  for (const a of alerts) {
    const r = repair.get(a.subject);
    if (a.kind === "success_rate" && r) {
      const ok = r.outcomes.filter((o) => o === "done").length;
      // The last N attempts all succeeded: what the window still counts is
      // history, not the receiver's state.
      if (r.outcomes.length >= last && ok === r.outcomes.length) continue;
      if (r.outcomes[0] === "done") {
        now.set(keyOf(a.kind, a.subject), { state: "recovering", a });
        continue;
      }
    }
    now.set(keyOf(a.kind, a.subject), { state: "firing", a });
  }
  const pool = queuePools(sql)[0];
  const rows = await asService(
    pool,
    "queue",
    { tenantId: sandboxId },
    async ({ sql }) => {
      const open = await sql<
        { id: string; kind: string; subject: string; state: string }[]
      >`
      select id, kind, subject, state from console.alert_episodes
       where tenant_id = ${sandboxId} and resolved_at is null for update`;
      for (const e of open) {
        const reading = now.get(keyOf(e.kind, e.subject));
        if (reading) {
          await sql`
          update console.alert_episodes
             set state = ${reading.state}, value = ${reading.a.value},
                 changed_at = case when state = ${reading.state}
                                   then changed_at else now() end
           where id = ${e.id}
             and (state <> ${reading.state} or value <> ${reading.a.value})`;
          now.delete(keyOf(e.kind, e.subject));
          continue;
        }
        const inFlight = e.kind === "dead_letters" &&
          (repair.get(e.subject)?.redriving ?? 0) > 0;
        await sql`
        update console.alert_episodes
           set state = ${inFlight ? "recovering" : "resolved"},
               resolved_at = ${inFlight ? null : sql`now()`},
               changed_at = now()
         where id = ${e.id}
           and (${!inFlight} or state <> 'recovering')`;
      }
      for (const { state, a } of now.values()) {
        await sql`
        insert into console.alert_episodes
          (tenant_id, kind, subject, state, value, threshold, since)
        values (${sandboxId}, ${a.kind}, ${a.subject}, ${state}, ${a.value},
                ${a.threshold}, ${a.since})
        on conflict (tenant_id, kind, subject) where resolved_at is null
        do nothing`;
      }
      return await sql<EpisodeRow[]>`
      select * from console.alert_episodes
       where tenant_id = ${sandboxId}
         and (resolved_at is null
              or (acknowledged_at is null and resolved_at >
                  now() - ${RESOLVED_SHOWN_MINUTES} * interval '1 minute'))
       order by since, id`;
    },
  );
  return alertBoardSchema.parse({
    alerts: rows.map(episodeOf),
    deadLetters,
  });
}

interface EpisodeRow {
  id: string;
  kind: AlertEpisode["kind"];
  subject: string;
  state: AlertEpisode["state"];
  value: number;
  threshold: number;
  since: Date;
  changed_at: Date;
  resolved_at: Date | null;
  acknowledged_by: string | null;
  acknowledged_at: Date | null;
}

function episodeOf(r: EpisodeRow): AlertEpisode {
  return {
    id: Number(r.id),
    kind: r.kind,
    subject: r.subject,
    state: r.state,
    value: r.value,
    threshold: r.threshold,
    since: r.since.toISOString(),
    changedAt: r.changed_at.toISOString(),
    resolvedAt: r.resolved_at?.toISOString() ?? null,
    acknowledgedBy: r.acknowledged_by,
    acknowledgedAt: r.acknowledged_at?.toISOString() ?? null,
  };
}

/** The sandbox's dead letters, every receiver. */
async function deadLetterTotal(sql: Sql, sandboxId: string): Promise<number> {
  const parts = await readServices(
    sql,
    sandboxId,
    (at, queues) =>
      Promise.all(queues.map((q) =>
        at(q, (sql: TxSql) =>
          sql<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries where state = 'dead'`)
      )),
  );
  return parts.flat().reduce((n, r) => n + r.n, 0);
}

/**
 * Acknowledges episode `id` as `actor`, and logs it in the same
 * transaction. Null when the sandbox has no such episode not yet
 * acknowledged (the route answers 404).
 */
export async function acknowledgeAlert(
  sql: Sql,
  sandboxId: string,
  id: number,
  actor: string,
): Promise<AlertEpisode | null> {
  const pool = queuePools(sql)[0];
  return await asService(
    pool,
    "queue",
    { tenantId: sandboxId },
    async ({ sql }) => {
      const [row] = await sql<EpisodeRow[]>`
      update console.alert_episodes
         set acknowledged_by = ${actor}, acknowledged_at = now()
       where id = ${id} and tenant_id = ${sandboxId}
         and acknowledged_at is null
      returning *`;
      if (!row) return null;
      await logAction(sql, sandboxId, {
        actor,
        action: "acknowledge",
        target: { alert: row.kind, subject: row.subject, state: row.state },
        count: 1,
      });
      return episodeOf(row);
    },
  );
}
