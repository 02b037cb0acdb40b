/**
 * A receiver's last hour as a small SVG chart: one bar per minute, the
 * current minute on the right. Throughput draws done attempts per minute;
 * latency draws each minute's p95 in milliseconds. Drawn the same on the
 * server and in the islands that keep it live; sizes are SVG attributes,
 * so the page needs no inline styles.
 */
import type { ReceiverMinute } from "../services/console/receivers.ts";

/** What a chart draws from each minute. */
export type ChartMetric = "throughput" | "latency";

/** Props: the minutes (oldest first), what to draw, and whose they are. */
export interface MinuteChartProps {
  minutes: ReceiverMinute[];
  metric: ChartMetric;
  /** The receiver, for the chart's accessible name. */
  label: string;
}

const BAR = 2;
const HEIGHT = 32;

function valueOf(m: ReceiverMinute, metric: ChartMetric): number {
  return metric === "throughput" ? m.done : m.p95LatencyMs ?? 0;
}

/** The chart's one-line description: its peak and the current minute. */
export function chartSummary(
  minutes: ReceiverMinute[],
  metric: ChartMetric,
): string {
  const values = minutes.map((m) => valueOf(m, metric));
  const peak = Math.max(0, ...values);
  const now = values.at(-1) ?? 0;
  if (minutes.every((m) => m.attempts === 0)) return "no attempts in the hour";
  return metric === "throughput"
    ? `peak ${peak} per minute, ${now} this minute`
    : `p95 peak ${peak} ms, ${
      minutes.at(-1)?.p95LatencyMs == null ? "none" : `${now} ms`
    } this minute`;
}

/** Bars scaled to the hour's peak; an empty hour is a flat baseline. */
export function MinuteChart({ minutes, metric, label }: MinuteChartProps) {
  const values = minutes.map((m) => valueOf(m, metric));
  const peak = Math.max(0, ...values);
  const width = Math.max(1, minutes.length) * BAR;
  const what = metric === "throughput" ? "throughput" : "p95 latency";
  return (
    <svg
      class={`minute-chart minute-chart-${metric}`}
      viewBox={`0 0 ${width} ${HEIGHT}`}
      width={width * 2}
      height={HEIGHT}
      preserveAspectRatio="none"
      role="img"
      aria-label={`${label}: ${what} over the last hour, ${
        chartSummary(minutes, metric)
      }`}
      data-testid={`chart-${metric}-${label}`}
      data-peak={peak}
    >
      <rect class="minute-chart-base" y={HEIGHT - 1} width={width} height={1} />
      {values.map((v, i) => {
        if (v <= 0) return null;
        const h = Math.max(1, Math.round((v / peak) * (HEIGHT - 2)));
        return (
          <rect
            key={minutes[i].at}
            class="minute-chart-bar"
            x={i * BAR}
            y={HEIGHT - 1 - h}
            width={BAR - 0.5}
            height={h}
          >
            <title>
              {`${minutes[i].at.slice(11, 16)} UTC: ${
                metric === "throughput" ? `${v} done` : `${v} ms`
              }`}
            </title>
          </rect>
        );
      })}
    </svg>
  );
}
