/**
 * `/metrics`: what Prometheus scrapes. Latencies are histograms kept in this
 * process (relay lag: message created -> published; delivery: message
 * created -> subscriber answered 2xx); counts and ages are read from the
 * database at scrape time, across every sandbox.
 */
import type { Sql, TxSql } from "../lib/db/connect.ts";
import { asService, poolOf } from "../lib/db/service.ts";
import { LATENCY_BUCKETS, Registry } from "../lib/metrics/mod.ts";
import { SENDERS } from "./routing.ts";
import { tallyDeliveries } from "./console/deliveries.ts";
import { attemptCounts } from "./console/alerts.ts";
import { readWorkerState } from "./console/worker_alerts.ts";

export function bakeryMetrics(sql: Sql) {
  const registry = new Registry();
  const relayLag = registry.histogram(
    "bakery_relay_lag_seconds",
    "Time from a message's creation to its publish to the queue.",
    LATENCY_BUCKETS,
  );
  const delivered = registry.histogram(
    "bakery_delivery_seconds",
    "Time from a message's creation to its subscriber's 2xx answer.",
    LATENCY_BUCKETS,
  );
  /** Reads in the database of `service` (in split mode, its own). */
  const read = <T>(service: string, fn: (tx: TxSql) => Promise<T>) =>
    asService(poolOf(sql, service), "console", "workers", (tx) => fn(tx.sql));
  /** Reads each queue (split mode: each sender's) and adds up by labels. */
  const eachQueue = async <L extends Record<string, string>>(
    fn: (tx: TxSql) => Promise<{ labels: L; value: number }[]>,
  ) => {
    const queues = [...new Map(SENDERS.map((s) => [poolOf(sql, s), s]))];
    const sums = new Map<string, { labels: L; value: number }>();
    for (const [, service] of queues) {
      for (const { labels, value } of await read(service, fn)) {
        const key = JSON.stringify(labels);
        const seen = sums.get(key);
        sums.set(key, { labels, value: (seen?.value ?? 0) + value });
      }
    }
    return [...sums.values()];
  };
  registry.gauge({
    name: "bakery_outbox_pending",
    help: "Outbox rows not yet published, per service.",
    read: () =>
      Promise.all(SENDERS.map((service) =>
        read(service, async (sql) => {
          const [r] = await sql<{ n: number }[]>`
            select count(*)::int as n from ${sql(`${service}.outbox`)}`;
          return { labels: { service }, value: r.n };
        })
      )),
  });
  registry.gauge({
    name: "bakery_outbox_oldest_ready_age_seconds",
    help:
      "Age of the oldest outbox row that is due now, per service (0 when none).",
    read: () =>
      Promise.all(SENDERS.map((service) =>
        read(service, async (sql) => {
          const [r] = await sql<{ age: number | null }[]>`
            select extract(epoch from now() - min(created_at))::float8 as age
              from ${sql(`${service}.outbox`)}
             where next_attempt_at <= now()`;
          return { labels: { service }, value: r.age ?? 0 };
        })
      )),
  });
  registry.gauge({
    name: "bakery_deliveries",
    help: "Deliveries by state and subscriber.",
    read: () =>
      eachQueue(async (sql) =>
        (await tallyDeliveries(sql)).map((r) => ({
          labels: { state: r.state, subscriber: r.subscriber },
          value: r.n,
        }))
      ),
  });
  registry.gauge({
    name: "bakery_dead_letters",
    help: "Dead letters waiting for an operator, per subscriber.",
    read: () =>
      eachQueue(async (sql) =>
        (await sql<{ subscriber: string; n: number }[]>`
          select subscriber, count(*)::int as n from queue.deliveries
           where state = 'dead' group by 1`).map((r) => ({
          labels: { subscriber: r.subscriber },
          value: r.n,
        }))
      ),
  });
  // The success ratio and its volume, each from the last 15 minutes'
  // attempts: each queue's attempts and successes added up first.
  const rates = async () => {
    const [attempts, done] = await Promise.all(
      (["attempts", "done"] as const).map((field) =>
        eachQueue(async (sql) =>
          (await attemptCounts(sql)).map((r) => ({
            labels: { subscriber: r.subscriber },
            value: r[field],
          }))
        )
      ),
    );
    const succeeded = new Map(done.map((d) => [d.labels.subscriber, d.value]));
    return attempts.map((a) => ({
      subscriber: a.labels.subscriber,
      attempts: a.value,
      rate: (succeeded.get(a.labels.subscriber) ?? 0) / a.value,
    }));
  };
  const bySubscriber = (
    name: string,
    help: string,
    value: (r: { rate: number; attempts: number }) => number,
  ) =>
    registry.gauge({
      name,
      help,
      read: async () =>
        (await rates()).map((r) => ({
          labels: { subscriber: r.subscriber },
          value: value(r),
        })),
    });
  bySubscriber(
    "bakery_receiver_success_ratio",
    "Share of a subscriber's delivery attempts of the last 15 minutes that succeeded (only subscribers with attempts).",
    (r) => r.rate,
  );
  bySubscriber(
    "bakery_receiver_attempts_15m",
    "A subscriber's delivery attempts of the last 15 minutes (only subscribers with attempts): the success ratio's volume.",
    (r) => r.attempts,
  );
  // The workers' heartbeats and the work that waits for them, across every
  // sandbox: the figures of the no_live_worker and silent_worker alerts
  // (services/console/worker_alerts.ts). Four small reads per gauge.
  const queues = [...new Map(SENDERS.map((s) => [poolOf(sql, s), s]))]
    .map(([, s]) => s);
  const workerState = () => readWorkerState(read, queues);
  registry.gauge({
    name: "bakery_workers",
    help: "Worker processes by heartbeat: live, or silent past three beats.",
    read: async () => {
      const { workers } = await workerState();
      return (["live", "silent"] as const).map((state) => ({
        labels: { state },
        value: workers.filter((w) => w.state === state).length,
      }));
    },
  });
  registry.gauge({
    name: "bakery_workers_live_by_role",
    help:
      "Live worker processes that run relays (relay) or consumers (consume).",
    read: async () => {
      const { workers } = await workerState();
      return (["relay", "consume"] as const).map((role) => ({
        labels: { role },
        value: workers.filter((w) =>
          w.state === "live" && w.roles.includes(role)
        ).length,
      }));
    },
  });
  registry.gauge({
    name: "bakery_work_waiting",
    help:
      "Work due now, by the role that serves it: outbox rows (relay), pending deliveries (consume).",
    read: async () =>
      (await workerState()).waiting.map((w) => ({
        labels: { role: w.role },
        value: w.n,
      })),
  });
  registry.gauge({
    name: "bakery_workers_silent_with_leases",
    help: "Silent worker processes whose leases have not yet expired.",
    read: async () => [{
      labels: {},
      value: (await workerState()).workers.filter((w) =>
        w.state === "silent" && w.leases > 0
      ).length,
    }],
  });
  return {
    registry,
    observeLag: (seconds: number, service: string) =>
      relayLag.observe(seconds, { service }),
    observeDelivered: (seconds: number, subscriber: string) =>
      delivered.observe(seconds, { subscriber }),
  };
}
