/**
 * The "What it costs" table of the How it's built page: per paid order of
 * the visitor's sandbox, measured from its rows, beside what the benchmark
 * measured of the same order without its outbox row.
 */
import type { Costs } from "../services/how/costs.ts";
import type { BenchmarkComparison } from "../services/how/benchmark.ts";

const NOT_MEASURED = "not measured";

function num(n: number | null, unit = ""): string {
  if (n === null) return "–";
  return `${n.toLocaleString("en-GB", { maximumFractionDigits: 2 })}${unit}`;
}

/** Props: this sandbox's costs, the benchmark's figures, the transport. */
export interface CostsTableProps {
  costs: Costs | null;
  benchmark: BenchmarkComparison | null;
  queue: "postgres" | "jetstream";
}

/** Figure | this sandbox, per paid order | the same without the outbox. */
export function CostsTable({ costs, benchmark, queue }: CostsTableProps) {
  const per = costs?.perPaidOrder;
  const row = (
    key: string,
    label: string,
    value: string,
    without = NOT_MEASURED,
  ) => (
    <tr key={key} data-testid={`cost-${key}`}>
      <th scope="row">{label}</th>
      <td class="num" data-testid={`cost-${key}-value`}>{value}</td>
      <td class="num muted">{without}</td>
    </tr>
  );
  const services = per ? Object.entries(per.rowsWritten) : [];
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
            <th class="num">Your sandbox</th>
            <th class="num">Without the outbox (benchmark)</th>
          </tr>
        </thead>
        <tbody>
          {services.map(([service, n]) =>
            row(`rows-${service}`, `Rows written by ${service}`, num(n))
          )}
          {row(
            "bytes-outbox",
            "Bytes in the outboxes",
            num(per?.bytes.outbox ?? null, " B"),
          )}
          {row(
            "bytes-queue",
            queue === "jetstream"
              ? "Bytes of the queue in PostgreSQL (the broker's copy is not counted)"
              : "Bytes in the queue",
            num(per?.bytes.queue ?? null, " B"),
          )}
          {row(
            "bytes-inbox",
            "Bytes in the inboxes",
            num(per?.bytes.inbox ?? null, " B"),
          )}
          {row("messages", "Messages", num(per?.messages ?? null))}
          {row("deliveries", "Deliveries", num(per?.deliveries ?? null))}
          {row("attempts", "Attempts", num(per?.attempts ?? null))}
          {row(
            "p50",
            "Webhook to all six receivers, p50",
            num(costs?.latencyMs.p50 ?? null, " ms"),
          )}
          {row(
            "p95",
            "Webhook to all six receivers, p95",
            num(costs?.latencyMs.p95 ?? null, " ms"),
          )}
          {row(
            "orders-per-second",
            "Orders placed per second, 8 clients (benchmark)",
            benchmark
              ? num(benchmark.withOutbox.ordersPerSecond, "/s")
              : NOT_MEASURED,
            benchmark
              ? num(benchmark.withoutOutbox.ordersPerSecond, "/s")
              : NOT_MEASURED,
          )}
          {row(
            "cpu",
            "CPU per order placed, client and PostgreSQL (benchmark)",
            benchmark
              ? num(benchmark.withOutbox.cpuUsPerOrder, " µs")
              : NOT_MEASURED,
            benchmark
              ? num(benchmark.withoutOutbox.cpuUsPerOrder, " µs")
              : NOT_MEASURED,
          )}
        </tbody>
      </table>
      <p class="muted">
        Bytes are what PostgreSQL stores for each row (<code>
          pg_column_size
        </code>), without indexes. The latency runs from the Stripe webhook's
        arrival to the last of the six inbox rows, so an order whose messages
        waited as dead letters counts with its wait.{" "}
        {benchmark
          ? `The benchmark's figures come from bench/results.json (commit ${
            (benchmark.commit ?? "unknown").slice(0, 7)
          }), measured on its own machine, not in your sandbox; it measured no rows, bytes or latency without the outbox.`
          : "The benchmark has not been run here (no bench/results.json): nothing was measured without the outbox."}
        {queue === "jetstream" &&
          " Over JetStream the broker holds its own copy of each message; the queue's bytes above are only what PostgreSQL stores for it: deliveries, attempts and the relay's copy of the messages."}
      </p>
    </div>
  );
}
