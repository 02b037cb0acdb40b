/**
 * A receiver's chart of the last hour (done per minute and p95 latency on
 * one time axis) with what it shows in words, and the grid of every
 * receiver's: for the receivers page and the overview.
 */
import { serviceLabel } from "../format.ts";
import { chartSummary, MinuteChart } from "./_minute_chart.tsx";
import type { ReceiverStats } from "../services/console/receivers.ts";

/** Props: one receiver's last hour. */
export interface ReceiverChartsProps {
  receiver: ReceiverStats;
}

/** The chart, and its peak and current minute in words. */
export function ReceiverCharts({ receiver }: ReceiverChartsProps) {
  return (
    <div class="receiver-charts" data-testid={`charts-${receiver.name}`}>
      <figure class="minute-figure">
        <MinuteChart minutes={receiver.minutes} label={receiver.name} />
        <figcaption class="muted">{caption(receiver)}</figcaption>
      </figure>
    </div>
  );
}

/** Both summaries in one line, or one "no attempts" for a quiet hour. */
function caption({ minutes }: ReceiverStats): string {
  if (minutes.every((m) => m.attempts === 0)) return "no attempts in the hour";
  return `done: ${chartSummary(minutes, "throughput")}; ${
    chartSummary(minutes, "latency")
  }`;
}

/** Props: every receiver's last hour. */
export interface ReceiverChartGridProps {
  receivers: ReceiverStats[];
}

/** One titled chart per receiver. */
export function ReceiverChartGrid({ receivers }: ReceiverChartGridProps) {
  return (
    <ul class="chart-grid" data-testid="receiver-charts">
      {receivers.map((r) => (
        <li key={r.name}>
          <h3 class="chart-title">{serviceLabel(r.name)}</h3>
          <ReceiverCharts receiver={r} />
        </li>
      ))}
    </ul>
  );
}
