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
import { readServices } from "../databases.ts";
import { bySubscriber, earlier } from "./by_subscriber.ts";
import { SENDERS } from "../routing.ts";
import { type Alert, alertSchema } from "./contracts.ts";
import { workerAlerts } from "./worker_alerts.ts";

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

/** Age of the oldest outbox row of `service` that is due now, if any. */
async function oldestReadyAge(
  sql: TxSql,
  service: string,
): Promise<{ service: string; ageSeconds: number; createdAt: Date }[]> {
  const [r] = await sql<{ oldest: Date | null; age: number | null }[]>`
    select min(created_at) as oldest,
           extract(epoch from now() - min(created_at))::float8 as age
      from ${sql(`${service}.outbox`)}
     where next_attempt_at <= now()`;
  return r.oldest && r.age !== null
    ? [{ service, ageSeconds: r.age, createdAt: r.oldest }]
    : [];
}

export interface AttemptCount {
  subscriber: string;
  attempts: number;
  done: number;
  first_failure: Date | null;
}

/** Each subscriber's attempts in the window, and how many succeeded. */
export async function attemptCounts(sql: TxSql): Promise<AttemptCount[]> {
  return await sql<AttemptCount[]>`
    select a.subscriber, count(*)::int as attempts,
           count(*) filter (where a.outcome = 'done')::int as done,
           min(a.started_at) filter (where a.outcome <> 'done')
             as first_failure
      from queue.attempt_log a
     where a.started_at > now() - ${SUCCESS_WINDOW_MINUTES} * interval '1 minute'
     group by a.subscriber order by a.subscriber`;
}

/**
 * Dead letters per subscriber, and when the `nth` oldest of them died: the
 * moment the count reached `nth` (null while there are fewer). Each queue
 * gives its own `nth` oldest, and the oldest of them all decide.
 */
async function deadLetterCounts(sql: TxSql, nth: number) {
  return await sql<{ subscriber: string; n: number; oldest: Date[] }[]>`
    select subscriber, count(*)::int as n,
           (array_agg(dead_at order by dead_at, id))[1:${nth}::int] as oldest
      from queue.deliveries where state = 'dead'
     group by subscriber order by subscriber`;
}

/** The alerts that fire now in one sandbox, by kind and subject. */
export async function currentAlerts(
  sql: Sql,
  sandboxId: string,
  thresholds: AlertThresholds,
): Promise<Alert[]> {
  const nth = thresholds.ALERT_DEAD_LETTERS;
  return await readServices(
    sql,
    sandboxId,
    async (at, queues) => {
      const [ages, deadParts, countParts] = await Promise.all([
        Promise.all(
          SENDERS.map((s) => at(s, (sql) => oldestReadyAge(sql, s))),
        ),
        Promise.all(
          queues.map((q) => at(q, (sql) => deadLetterCounts(sql, nth))),
        ),
        Promise.all(queues.map((q) => at(q, attemptCounts))),
      ]);
      const dead = bySubscriber(deadParts, (a, b) => ({
        subscriber: a.subscriber,
        n: a.n + b.n,
        oldest: [...a.oldest, ...b.oldest].sort((x, y) => +x - +y),
      })).map((d) => ({ ...d, reached: d.oldest[nth - 1] ?? null }));
      const rates = bySubscriber(countParts, (a, b) => ({
        subscriber: a.subscriber,
        attempts: a.attempts + b.attempts,
        done: a.done + b.done,
        first_failure: earlier(a.first_failure, b.first_failure),
      })).map((r) => ({
        subscriber: r.subscriber,
        attempts: r.attempts,
        rate: r.done / r.attempts,
        firstFailureAt: r.first_failure,
      }));
      const alerts: Alert[] = [];
      const ageLimit = thresholds.ALERT_OUTBOX_AGE_S;
      for (const a of ages.flat()) {
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
      // The workers' own (no_live_worker, silent_worker): worker_alerts.ts.
      alerts.push(...await workerAlerts(at, queues));
      return alertsSchema.parse(alerts);
    },
  );
}
