/**
 * A receiver's two charts of the last hour, throughput over p95 latency,
 * each with its caption, and the grid of every receiver's: for the
 * receivers page and the overview.
 */
import { chartSummary, MinuteChart } from "./_minute_chart.tsx";
import type { ReceiverStats } from "../services/console/receivers.ts";

/** Props: one receiver's last hour. */
export interface ReceiverChartsProps {
  receiver: ReceiverStats;
}

/** Throughput and latency, stacked, with what each one shows in words. */
export function ReceiverCharts({ receiver }: ReceiverChartsProps) {
  return (
    <div class="receiver-charts" data-testid={`charts-${receiver.name}`}>
      <figure class="minute-figure">
        <MinuteChart
          minutes={receiver.minutes}
          metric="throughput"
          label={receiver.name}
        />
        <figcaption class="muted">
          done: {chartSummary(receiver.minutes, "throughput")}
        </figcaption>
      </figure>
      <figure class="minute-figure">
        <MinuteChart
          minutes={receiver.minutes}
          metric="latency"
          label={receiver.name}
        />
        <figcaption class="muted">
          {chartSummary(receiver.minutes, "latency")}
        </figcaption>
      </figure>
    </div>
  );
}

/** Props: every receiver's last hour. */
export interface ReceiverChartGridProps {
  receivers: ReceiverStats[];
}

/** One titled pair of charts per receiver. */
export function ReceiverChartGrid({ receivers }: ReceiverChartGridProps) {
  return (
    <ul class="chart-grid" data-testid="receiver-charts">
      {receivers.map((r) => (
        <li key={r.name}>
          <h3 class="chart-title">{r.name}</h3>
          <ReceiverCharts receiver={r} />
        </li>
      ))}
    </ul>
  );
}
