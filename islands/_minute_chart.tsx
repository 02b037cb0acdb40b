/**
 * A receiver's last hour as a uPlot chart: done deliveries per minute as
 * bars on the left axis, the p95 latency of the minute's attempts as a line
 * on the right axis (milliseconds), time in UTC below, the current minute
 * on the right. Hovering a minute shows its time and both values in the
 * legend, on every receiver's chart at once (the cursors are synced). The
 * server renders the box at its final height; `chartSummary` is the words
 * that go with it, which the page shows without script too.
 */
import uPlot from "uplot";
import { useMemo } from "preact/hooks";
import type { ReceiverMinute } from "../services/console/receivers.ts";
import { type ChartTheme, UPlotChart } from "./_uplot_chart.tsx";

/** What a summary describes from each minute. */
export type ChartMetric = "throughput" | "latency";

/** Props: the minutes (oldest first) and whose they are. */
export interface MinuteChartProps {
  minutes: ReceiverMinute[];
  /** The receiver, for the test id and the legend's sync. */
  label: string;
}

/**
 * The canvas's height: 60 bars need no more, and six charts fit two
 * screens of the overview. `.chart-box-minutes` reserves it and the legend.
 */
const HEIGHT = 140;

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

/** Minutes as uPlot's columns: seconds since the epoch, done, p95. */
function columns(minutes: ReceiverMinute[]): uPlot.AlignedData {
  return [
    minutes.map((m) => Date.parse(m.at) / 1000),
    minutes.map((m) => m.done),
    minutes.map((m) => m.p95LatencyMs),
  ];
}

// Counts are whole: ticks at 1, 2, 5, 10... never at 0.5.
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/** 0 up to a little above the peak; an empty hour still has a 0-1 axis. */
function fromZero(_u: uPlot, _min: number | null, max: number | null) {
  return uPlot.rangeNum(0, Math.max(1, max ?? 0), 0.1, true);
}

/** A value of the legend: the hovered minute's, or the latest one's. */
function legendValue(format: (v: number | null) => string) {
  return (u: uPlot, raw: number | null, sidx: number, idx: number | null) =>
    format(idx === null ? (u.data[sidx].at(-1) ?? null) : raw);
}

/** The time of a minute, as the console writes times: `14:05 UTC`. */
function clock(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(11, 16)} UTC`;
}

function options(theme: ChartTheme): Omit<uPlot.Options, "width" | "height"> {
  const axis = {
    stroke: theme.muted,
    font: theme.font,
    grid: { stroke: theme.line, width: 1 },
    ticks: { stroke: theme.line, width: 1, size: 4 },
  };
  return {
    // The console writes every time in UTC (format.ts), so do the axes.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    cursor: {
      // No zooming a one-hour strip; hovering is what it is for.
      drag: { x: false, y: false, setScale: false },
      // A minute is a column: the vertical line is the whole cursor.
      y: false,
      sync: { key: "receiver-minutes" },
    },
    legend: { live: true },
    scales: {
      // Half a minute of room each side, so the first and last bars stay
      // inside the axis.
      x: { time: true, range: (_u, min, max) => [min - 30, max + 30] },
      done: { range: fromZero },
      ms: { range: fromZero },
    },
    series: [
      {
        label: "minute",
        value: legendValue((v) => v === null ? "–" : clock(v)),
      },
      {
        label: "done",
        scale: "done",
        stroke: theme.ok,
        fill: theme.ok,
        width: 0,
        paths: uPlot.paths.bars!({ size: [0.7, 12], align: 0 }),
        points: { show: false },
        value: legendValue((v) => `${v ?? 0} per minute`),
      },
      {
        label: "p95",
        scale: "ms",
        stroke: theme.info,
        width: 1.5,
        spanGaps: false,
        value: legendValue((v) => v === null ? "–" : `${v} ms`),
      },
    ],
    axes: [
      { ...axis, space: 50, values: "{HH}:{mm}" },
      { ...axis, scale: "done", size: 36, space: 24, incrs: WHOLE_STEPS },
      {
        ...axis,
        scale: "ms",
        side: 1,
        // Room for "500 ms" or "1.5 s" in 12 px type.
        size: 58,
        space: 24,
        grid: { show: false },
        values: (_u, splits) =>
          splits.map((v) =>
            v >= 1000 ? `${+(v / 1000).toFixed(1)} s` : `${v} ms`
          ),
      },
    ],
  };
}

/** The hour's chart, in a box that reserves its height. */
export function MinuteChart({ minutes, label }: MinuteChartProps) {
  const data = useMemo(() => columns(minutes), [minutes]);
  return (
    <UPlotChart
      options={options}
      data={data}
      height={HEIGHT}
      class="chart-box chart-box-minutes"
      testid={`chart-${label}`}
    />
  );
}
