/**
 * The console's alerts: what is wrong now, by the thresholds in the
 * settings (ALERT_OUTBOX_AGE_S, ALERT_DEAD_LETTERS, ALERT_SUCCESS_RATE and
 * ALERT_SUCCESS_MIN_ATTEMPTS).
 * The readings are the ones `/metrics` exports (services/metrics.ts), so
 * ops/prometheus/alerts.yml states the same rules over the same numbers:
 *
 * | kind           | subject    | fires when                                      |
 * | -------------- | ---------- | ----------------------------------------------- |
 * | `outbox_age`   | service    | its oldest ready outbox row is older than N s   |
 * | `dead_letters` | subscriber | it has N or more dead letters                   |
 * | `success_rate` | subscriber | under N of its attempts in 15 minutes succeeded, of M attempts or more |
 */
import { z } from "zod";
import type { Sql, TxSql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { SENDERS } from "../routing.ts";
import { type Alert, alertSchema } from "./contracts.ts";

export type { Alert } from "./contracts.ts";

/** The window of the success rate, as /metrics and the overview use it. */
export const SUCCESS_WINDOW_MINUTES = 15;

const alertsSchema = z.array(alertSchema);

/** The thresholds, as the settings name them. */
export interface AlertThresholds {
  ALERT_OUTBOX_AGE_S: number;
  ALERT_DEAD_LETTERS: number;
  ALERT_SUCCESS_RATE: number;
  /** Fewer attempts in the window than this raise no success_rate alert. */
  ALERT_SUCCESS_MIN_ATTEMPTS: number;
}

/** Age of the oldest outbox row that is due now, per sender. */
export async function oldestReadyAges(
  sql: TxSql,
): Promise<{ service: string; ageSeconds: number; createdAt: Date }[]> {
  const out = [];
  for (const service of SENDERS) {
    const [r] = await sql<{ oldest: Date | null; age: number | null }[]>`
      select min(created_at) as oldest,
             extract(epoch from now() - min(created_at))::float8 as age
        from ${sql(`${service}.outbox`)}
       where next_attempt_at <= now()`;
    if (r.oldest && r.age !== null) {
      out.push({ service, ageSeconds: r.age, createdAt: r.oldest });
    }
  }
  return out;
}

/** Success of each subscriber's attempts in the last 15 minutes. */
export async function successRates(sql: TxSql): Promise<
  {
    subscriber: string;
    attempts: number;
    rate: number;
    firstFailureAt: Date | null;
  }[]
> {
  const rows = await sql<
    {
      subscriber: string;
      attempts: number;
      done: number;
      first_failure: Date | null;
    }[]
  >`
    select a.subscriber, count(*)::int as attempts,
           count(*) filter (where a.outcome = 'done')::int as done,
           min(a.started_at) filter (where a.outcome <> 'done')
             as first_failure
      from queue.attempt_log a
     where a.started_at > now() - ${SUCCESS_WINDOW_MINUTES} * interval '1 minute'
     group by a.subscriber order by a.subscriber`;
  return rows.map((r) => ({
    subscriber: r.subscriber,
    attempts: r.attempts,
    rate: r.done / r.attempts,
    firstFailureAt: r.first_failure,
  }));
}

/**
 * Dead letters per subscriber, and when the `nth` oldest of them died: the
 * moment the count reached `nth` (null while there are fewer).
 */
async function deadLetterCounts(sql: TxSql, nth: number) {
  return await sql<
    { subscriber: string; n: number; reached: Date | null }[]
  >`
    select subscriber, count(*)::int as n,
           (array_agg(dead_at order by dead_at, id))[${nth}::int] as reached
      from queue.deliveries where state = 'dead'
     group by subscriber order by subscriber`;
}

/** The alerts that fire now in one sandbox, by kind and subject. */
export async function currentAlerts(
  sql: Sql,
  sandboxId: string,
  thresholds: AlertThresholds,
): Promise<Alert[]> {
  return await asService(
    sql,
    "console",
    { tenantId: sandboxId },
    async ({ sql }) => {
      const [ages, dead, rates] = await Promise.all([
        oldestReadyAges(sql),
        deadLetterCounts(sql, thresholds.ALERT_DEAD_LETTERS),
        successRates(sql),
      ]);
      const alerts: Alert[] = [];
      const ageLimit = thresholds.ALERT_OUTBOX_AGE_S;
      for (const a of ages) {
        // Judged as shown, to the millisecond: an age of 1.0003 s against a
        // limit of 1 s would read "1 s, over 1 s".
        const value = Math.round(a.ageSeconds * 1000) / 1000;
        if (value <= ageLimit) continue;
        alerts.push({
          kind: "outbox_age",
          subject: a.service,
          value,
          threshold: ageLimit,
          since: new Date(a.createdAt.getTime() + ageLimit * 1000)
            .toISOString(),
        });
      }
      for (const d of dead) {
        if (d.n < thresholds.ALERT_DEAD_LETTERS || !d.reached) continue;
        alerts.push({
          kind: "dead_letters",
          subject: d.subscriber,
          value: d.n,
          threshold: thresholds.ALERT_DEAD_LETTERS,
          since: d.reached.toISOString(),
        });
      }
      for (const r of rates) {
        // Judged as shown, as the age is.
        const value = Math.round(r.rate * 1000) / 1000;
        if (
          value >= thresholds.ALERT_SUCCESS_RATE || !r.firstFailureAt ||
          r.attempts < thresholds.ALERT_SUCCESS_MIN_ATTEMPTS
        ) continue;
        alerts.push({
          kind: "success_rate",
          subject: r.subscriber,
          value,
          threshold: thresholds.ALERT_SUCCESS_RATE,
          since: r.firstFailureAt.toISOString(),
        });
      }
      return alertsSchema.parse(alerts);
    },
  );
}
