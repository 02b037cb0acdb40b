/**
 * The outbox age histogram as inline SVG: one bar per age bucket, its count
 * above it and its bound below. Drawn with presentation attributes and
 * classes only (no inline style), so a `style-src 'self'` policy holds. Pure:
 * the overview island renders it on the server and again on every change.
 */

/** One bucket: messages at most `le` seconds old (and older than the last). */
export interface AgeBucket {
  le: number | "+Inf";
  count: number;
}

// In SVG units; the drawing scales to its box. 480 wide keeps the 14-unit
// text readable (about 11 px) in a half-width panel of about 400 px.
const WIDTH = 480;
const HEIGHT = 200;
// Room above the tallest bar for its count, and below the axis for labels.
const TOP = 26;
const BOTTOM = 34;
const SIDE = 4;

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

/** Bars per age bucket of pending outbox messages. */
export function AgeHistogram({ buckets }: AgeHistogramProps) {
  const max = Math.max(0, ...buckets.map((b) => b.count));
  const total = buckets.reduce((n, b) => n + b.count, 0);
  const slot = (WIDTH - 2 * SIDE) / Math.max(1, buckets.length);
  const barWidth = slot * 0.68;
  const plot = HEIGHT - TOP - BOTTOM;
  const baseline = HEIGHT - BOTTOM;
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
      <line
        class="histogram-axis"
        x1={SIDE}
        x2={WIDTH - SIDE}
        y1={baseline + 0.5}
        y2={baseline + 0.5}
      />
      {total === 0 && (
        <text
          class="histogram-empty"
          x={WIDTH / 2}
          y={TOP + plot / 2}
          text-anchor="middle"
        >
          Nothing pending
        </text>
      )}
      {buckets.map((b, i) => {
        const h = max === 0
          ? 0
          : Math.max(b.count > 0 ? 3 : 0, b.count / max * plot);
        const x = SIDE + i * slot + (slot - barWidth) / 2;
        const label = bucketLabel(b, prevBound(buckets, b));
        const short = bucketLabel(b, prevBound(buckets, b), true);
        return (
          <g
            key={String(b.le)}
            data-testid={`age-bucket-${b.le}`}
            data-count={b.count}
          >
            <title>{`${label}: ${b.count}`}</title>
            <rect
              class={`histogram-bar ${toneOf(b)}`}
              x={x.toFixed(1)}
              y={(baseline - h).toFixed(1)}
              width={barWidth.toFixed(1)}
              height={h.toFixed(1)}
              rx="3"
            />
            <text
              class={b.count ? "histogram-count" : "histogram-count zero"}
              x={(x + barWidth / 2).toFixed(1)}
              y={(baseline - h - 7).toFixed(1)}
              text-anchor="middle"
            >
              {b.count}
            </text>
            <text
              class="histogram-label"
              x={(x + barWidth / 2).toFixed(1)}
              y={baseline + 22}
              text-anchor="middle"
            >
              {short}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

/** The bound of the bucket before `b`, for the `> 1 d` label. */
function prevBound(buckets: AgeBucket[], b: AgeBucket): number | undefined {
  const i = buckets.indexOf(b);
  const prev = i > 0 ? buckets[i - 1].le : undefined;
  return typeof prev === "number" ? prev : undefined;
}
