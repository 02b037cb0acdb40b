/**
 * The outbox age histogram as inline SVG: one bar per age bucket, on a
 * count axis with ticks and grid lines (left) and the buckets' bounds below
 * (the age axis). Hovering a bucket's column shows its count (an SVG
 * `<title>`). It stays SVG rather than uPlot: the buckets are categories,
 * not a time series, and the server draws the whole of it, so the page
 * shows it before and without script. Drawn with presentation attributes
 * and classes only (no inline style), so a `style-src 'self'` policy holds.
 * Pure: the overview island renders it on the server and again on every
 * change.
 */

/** One bucket: messages at most `le` seconds old (and older than the last). */
export interface AgeBucket {
  le: number | "+Inf";
  count: number;
}

// In SVG units; the drawing scales to its box. 440 wide keeps the 12-unit
// text about 11 px in a half-width panel of about 400 px.
const WIDTH = 440;
const HEIGHT = 220;
// Room above the tallest bar for its count and the axis' title, left of the
// axis for its tick labels, and below for the bounds and the age axis' title.
const TOP = 30;
const LEFT = 36;
const RIGHT = 6;
const BOTTOM = 42;
const TICK = 4;

/**
 * Where the count axis stops and its step: the step is 1, 2 or 5 times a
 * power of ten, at most four steps reach the peak, and an empty histogram
 * still has an axis from 0 to 1.
 *
 * @example
 * ```ts
 * countAxis(7); // { top: 8, step: 2 }
 * ```
 */
export function countAxis(peak: number): { top: number; step: number } {
  const rough = Math.max(1, peak) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(
    1,
    [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? power * 10,
  );
  return { top: Math.max(step, Math.ceil(peak / step) * step), step };
}

/**
 * A bound in seconds as people read it: `1 s`, `30 s`, `5 min`, `6 h`,
 * `1 d`; `short` drops the spaces and shortens minutes (`5m`) so that ten
 * labels fit under ten bars.
 */
function bound(seconds: number, short = false): string {
  const [n, unit] = seconds < 60
    ? [seconds, "s"]
    : seconds < 3600
    ? [seconds / 60, short ? "m" : "min"]
    : seconds < 86400
    ? [seconds / 3600, "h"]
    : [seconds / 86400, "d"];
  return short ? `${n}${unit}` : `${n} ${unit}`;
}

/**
 * The label of a bucket: `≤ 5 s`, or `> 1 d` for the last one; with `short`,
 * `≤5s` and `>1d`.
 *
 * @example
 * ```ts
 * bucketLabel({ le: 300, count: 2 }, 60); // "≤ 5 min"
 * ```
 */
export function bucketLabel(
  bucket: AgeBucket,
  previous?: number,
  short = false,
): string {
  const gap = short ? "" : " ";
  if (bucket.le === "+Inf") {
    return previous === undefined ? "any" : `>${gap}${bound(previous, short)}`;
  }
  return `≤${gap}${bound(bucket.le, short)}`;
}

// Fresh work is normal; past a minute something waits; past 5 minutes a
// promise is going stale and should catch the eye.
function toneOf(bucket: AgeBucket): "fresh" | "waiting" | "stale" {
  if (bucket.le !== "+Inf" && bucket.le <= 30) return "fresh";
  if (bucket.le !== "+Inf" && bucket.le <= 300) return "waiting";
  return "stale";
}

/** Props: the buckets of `outboxAges`, youngest first. */
export interface AgeHistogramProps {
  buckets: AgeBucket[];
}

/** Bars per age bucket of pending outbox messages, on a count axis. */
export function AgeHistogram({ buckets }: AgeHistogramProps) {
  const peak = Math.max(0, ...buckets.map((b) => b.count));
  const total = buckets.reduce((n, b) => n + b.count, 0);
  const { top, step } = countAxis(peak);
  const right = WIDTH - RIGHT;
  const slot = (right - LEFT) / Math.max(1, buckets.length);
  const barWidth = slot * 0.68;
  const plot = HEIGHT - TOP - BOTTOM;
  const baseline = HEIGHT - BOTTOM;
  const yOf = (count: number) => baseline - count / top * plot;
  const ticks = Array.from({ length: top / step + 1 }, (_, i) => i * step);
  const summary = total === 0
    ? "No pending messages."
    : buckets.filter((b) => b.count > 0).map((b) =>
      `${b.count} ${bucketLabel(b, prevBound(buckets, b))}`
    ).join(", ") + (total === 1 ? " (1 message)." : ` (${total} messages).`);

  return (
    <svg
      class="histogram"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-labelledby="age-histogram-title age-histogram-desc"
      data-testid="age-histogram"
      data-total={total}
    >
      <title id="age-histogram-title">Ages of pending outbox messages</title>
      <desc id="age-histogram-desc">{summary}</desc>
      <text class="histogram-axis-title" x={2} y={12}>messages</text>
      <g data-testid="age-histogram-count-axis">
        {ticks.map((t) => (
          <g key={t}>
            <line
              class={t === 0 ? "histogram-axis" : "histogram-grid"}
              x1={LEFT - TICK}
              x2={right}
              y1={yOf(t).toFixed(1)}
              y2={yOf(t).toFixed(1)}
            />
            <text
              class="histogram-tick"
              x={LEFT - TICK - 3}
              y={(yOf(t) + 4).toFixed(1)}
              text-anchor="end"
            >
              {t}
            </text>
          </g>
        ))}
        <line
          class="histogram-axis"
          x1={LEFT}
          x2={LEFT}
          y1={TOP - 6}
          y2={baseline}
        />
      </g>
      {total === 0 && (
        <text
          class="histogram-empty"
          x={(LEFT + right) / 2}
          y={TOP + plot / 2}
          text-anchor="middle"
        >
          Nothing pending
        </text>
      )}
      {buckets.map((b, i) => {
        const h = Math.max(b.count > 0 ? 2 : 0, b.count / top * plot);
        const x0 = LEFT + i * slot;
        const x = x0 + (slot - barWidth) / 2;
        const mid = x0 + slot / 2;
        const label = bucketLabel(b, prevBound(buckets, b));
        const short = bucketLabel(b, prevBound(buckets, b), true);
        return (
          <g
            key={String(b.le)}
            class="histogram-bucket"
            data-testid={`age-bucket-${b.le}`}
            data-count={b.count}
          >
            <title>{`${label}: ${b.count} pending`}</title>
            {/* The whole column answers the pointer, not just the bar. */}
            <rect
              class="histogram-hit"
              x={x0.toFixed(1)}
              y={TOP - 6}
              width={slot.toFixed(1)}
              height={plot + 6}
            />
            <rect
              class={`histogram-bar ${toneOf(b)}`}
              x={x.toFixed(1)}
              y={(baseline - h).toFixed(1)}
              width={barWidth.toFixed(1)}
              height={h.toFixed(1)}
            />
            {b.count > 0 && (
              <text
                class="histogram-count"
                x={mid.toFixed(1)}
                y={(baseline - h - 5).toFixed(1)}
                text-anchor="middle"
              >
                {b.count}
              </text>
            )}
            <line
              class="histogram-axis"
              x1={mid.toFixed(1)}
              x2={mid.toFixed(1)}
              y1={baseline}
              y2={baseline + TICK}
            />
            <text
              class="histogram-label"
              x={mid.toFixed(1)}
              y={baseline + TICK + 13}
              text-anchor="middle"
            >
              {short}
            </text>
          </g>
        );
      })}
      <text
        class="histogram-axis-title"
        x={(LEFT + right) / 2}
        y={HEIGHT - 4}
        text-anchor="middle"
      >
        age, at most
      </text>
    </svg>
  );
}

/** The bound of the bucket before `b`, for the `> 1 d` label. */
function prevBound(buckets: AgeBucket[], b: AgeBucket): number | undefined {
  const i = buckets.indexOf(b);
  const prev = i > 0 ? buckets[i - 1].le : undefined;
  return typeof prev === "number" ? prev : undefined;
}
