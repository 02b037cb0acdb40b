/**
 * `/metrics`: what Prometheus scrapes. Latencies are histograms kept in this
 * process (relay lag: message created -> published; delivery: message
 * created -> subscriber answered 2xx); counts and ages are read from the
 * database at scrape time, across every sandbox.
 */
import type { Sql } from "../lib/db/connect.ts";
import { asService } from "../lib/db/service.ts";
import { LATENCY_BUCKETS, Registry } from "../lib/metrics/mod.ts";
import { SENDERS } from "./routing.ts";
import { tallyDeliveries } from "./console/deliveries.ts";
import { successRates } from "./console/alerts.ts";

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
  const read = <T>(
    fn: (tx: Parameters<Parameters<typeof asService>[3]>[0]) => Promise<T>,
  ) => asService(sql, "console", "workers", fn);
  registry.gauge({
    name: "bakery_outbox_pending",
    help: "Outbox rows not yet published, per service.",
    read: () =>
      read(async ({ sql }) => {
        const out = [];
        for (const service of SENDERS) {
          const [r] = await sql<{ n: number }[]>`
            select count(*)::int as n from ${sql(`${service}.outbox`)}`;
          out.push({ labels: { service }, value: r.n });
        }
        return out;
      }),
  });
  registry.gauge({
    name: "bakery_outbox_oldest_ready_age_seconds",
    help:
      "Age of the oldest outbox row that is due now, per service (0 when none).",
    read: () =>
      read(async ({ sql }) => {
        const out = [];
        for (const service of SENDERS) {
          const [r] = await sql<{ age: number | null }[]>`
            select extract(epoch from now() - min(created_at))::float8 as age
              from ${sql(`${service}.outbox`)}
             where next_attempt_at <= now()`;
          out.push({ labels: { service }, value: r.age ?? 0 });
        }
        return out;
      }),
  });
  registry.gauge({
    name: "bakery_deliveries",
    help: "Deliveries by state and subscriber.",
    read: () =>
      read(async ({ sql }) => {
        const rows = await tallyDeliveries(sql);
        return rows.map((r) => ({
          labels: { state: r.state, subscriber: r.subscriber },
          value: r.n,
        }));
      }),
  });
  registry.gauge({
    name: "bakery_dead_letters",
    help: "Dead letters waiting for an operator, per subscriber.",
    read: () =>
      read(async ({ sql }) => {
        const rows = await sql<{ subscriber: string; n: number }[]>`
          select subscriber, count(*)::int as n from queue.deliveries
           where state = 'dead' group by 1`;
        return rows.map((r) => ({
          labels: { subscriber: r.subscriber },
          value: r.n,
        }));
      }),
  });
  // The success ratio and its volume, each from the last 15 minutes' attempts.
  const bySubscriber = (
    name: string,
    help: string,
    value: (r: { rate: number; attempts: number }) => number,
  ) =>
    registry.gauge({
      name,
      help,
      read: () =>
        read(async ({ sql }) =>
          (await successRates(sql)).map((r) => ({
            labels: { subscriber: r.subscriber },
            value: value(r),
          }))
        ),
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
  return {
    registry,
    observeLag: (seconds: number, service: string) =>
      relayLag.observe(seconds, { service }),
    observeDelivered: (seconds: number, subscriber: string) =>
      delivered.observe(seconds, { subscriber }),
  };
}
