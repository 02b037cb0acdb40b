/**
 * The "What it costs" tables of the How it's built page: per paid order of
 * the visitor's sandbox, measured from its rows; and, when the benchmark
 * has been run here, what it measured of the same order with and without
 * its outbox row. The benchmark measured nothing else without the outbox,
 * so nothing else has a cell for it.
 */
import type { Costs } from "../services/how/costs.ts";
import type { BenchmarkComparison } from "../services/how/benchmark.ts";
import { formatNumber, serviceLabel } from "../format.ts";

/**
 * A mean over the paid orders: one decimal where it is not whole (the
 * column says it is a mean), whole bytes and milliseconds.
 */
function mean(n: number | null, unit = "", decimals = 1): string {
  return n === null ? "–" : `${formatNumber(n, decimals)}${unit}`;
}

/** Who wrote the rows: a service by its label, the queue as such. */
function writer(service: string): string {
  return service === "queue" ? "the queue" : serviceLabel(service);
}

/** Props: this sandbox's costs, the benchmark's figures, the transport. */
export interface CostsTableProps {
  costs: Costs | null;
  benchmark: BenchmarkComparison | null;
  queue: "postgres" | "jetstream";
}

/** Your sandbox per paid order; then the benchmark, where it was run. */
export function CostsTable({ costs, benchmark, queue }: CostsTableProps) {
  const per = costs?.perPaidOrder;
  const row = (key: string, label: string, value: string) => (
    <tr key={key} data-testid={`cost-${key}`}>
      <th scope="row">{label}</th>
      <td class="num" data-testid={`cost-${key}-value`}>{value}</td>
    </tr>
  );
  const services = per ? Object.entries(per.rowsWritten) : [];
  // Only the figures the benchmark has: a missing one is left out.
  const measured = benchmark
    ? [
      {
        key: "orders-per-second",
        label: "Orders placed per second, 8 clients",
        with: benchmark.withOutbox.ordersPerSecond,
        without: benchmark.withoutOutbox.ordersPerSecond,
        unit: "/s",
      },
      {
        key: "cpu",
        label: "CPU per order placed, client and PostgreSQL",
        with: benchmark.withOutbox.cpuUsPerOrder,
        without: benchmark.withoutOutbox.cpuUsPerOrder,
        unit: " µs",
      },
    ].filter((m) => m.with !== null && m.without !== null)
    : [];
  return (
    // Focusable, so that a keyboard can scroll it when it is wider than the
    // screen (WCAG 2.1.1); named, so that a screen reader says what it is.
    <div
      class="table-wrap"
      role="region"
      aria-label="What a paid order costs"
      tabIndex={0}
    >
      <p data-testid="cost-paid-orders">
        {costs === null
          ? "Sign in or place an order to measure your own."
          : costs.paidOrders === 0
          ? "No paid order in your sandbox yet: order and pay, and the figures appear here."
          : `Measured over the ${costs.paidOrders} paid order${
            costs.paidOrders === 1 ? "" : "s"
          } of your sandbox, from their rows.`}
      </p>
      <table class="table" data-testid="costs">
        <thead>
          <tr>
            <th>Per paid order</th>
            <th class="num">
              {costs && costs.paidOrders > 1
                ? `Your sandbox, mean of ${costs.paidOrders}`
                : "Your sandbox"}
            </th>
          </tr>
        </thead>
        <tbody>
          {services.map(([service, n]) =>
            row(
              `rows-${service}`,
              `Rows written by ${writer(service)}`,
              mean(n),
            )
          )}
          {row(
            "bytes-outbox",
            "Bytes in the outboxes",
            mean(per?.bytes.outbox ?? null, " B", 0),
          )}
          {row(
            "bytes-queue",
            queue === "jetstream"
              ? "Bytes of the queue in PostgreSQL (the broker's copy is not counted)"
              : "Bytes in the queue",
            mean(per?.bytes.queue ?? null, " B", 0),
          )}
          {row(
            "bytes-inbox",
            "Bytes in the inboxes",
            mean(per?.bytes.inbox ?? null, " B", 0),
          )}
          {row("messages", "Messages", mean(per?.messages ?? null))}
          {row("deliveries", "Deliveries", mean(per?.deliveries ?? null))}
          {row("attempts", "Attempts", mean(per?.attempts ?? null))}
          {row(
            "p50",
            "Webhook to all six receivers, p50",
            mean(costs?.latencyMs.p50 ?? null, " ms", 0),
          )}
          {row(
            "p95",
            "Webhook to all six receivers, p95",
            mean(costs?.latencyMs.p95 ?? null, " ms", 0),
          )}
        </tbody>
      </table>
      {measured.length > 0 && (
        <table class="table costs-benchmark" data-testid="costs-benchmark">
          <thead>
            <tr>
              <th>Per order placed (benchmark)</th>
              <th class="num">With the outbox</th>
              <th class="num">Without it</th>
            </tr>
          </thead>
          <tbody>
            {measured.map((m) => (
              <tr key={m.key} data-testid={`cost-${m.key}`}>
                <th scope="row">{m.label}</th>
                <td class="num" data-testid={`cost-${m.key}-value`}>
                  {mean(m.with, m.unit, 0)}
                </td>
                <td class="num" data-testid={`cost-${m.key}-without`}>
                  {mean(m.without, m.unit, 0)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="muted">
        Bytes are what PostgreSQL stores for each row (<code>
          pg_column_size
        </code>), without indexes. The latency runs from the Stripe webhook's
        arrival to the last of the six inbox rows, so an order whose messages
        waited as dead letters counts with its wait.{" "}
        {measured.length > 0
          ? `The benchmark's figures come from bench/results.json (commit ${
            (benchmark?.commit ?? "unknown").slice(0, 7)
          }), measured on its own machine, not in your sandbox; it measured no rows, bytes or latency without the outbox.`
          : "The benchmark has not been run here (no bench/results.json), so there is nothing to set beside these figures."}
        {queue === "jetstream" &&
          " Over JetStream the broker holds its own copy of each message; the queue's bytes above are only what PostgreSQL stores for it: deliveries, attempts and the relay's copy of the messages."}
      </p>
    </div>
  );
}
