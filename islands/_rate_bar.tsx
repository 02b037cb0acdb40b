/**
 * A receiver's recent success rate as an HTML `<meter>` with the
 * percentage beside it. One proportion needs no chart: the meter carries
 * its own scale (0 to 100 %, amber below 95 %, red below 50 %: its `low`,
 * `high` and `optimum`), which the browser reads out and colours, and the
 * style sheet marks those two thresholds on the track. Everything is an
 * attribute, so the page needs no `style-src 'unsafe-inline'`.
 */

/** Props: the rate from 0 to 1, or null when there were no attempts. */
export interface RateBarProps {
  rate: number | null;
  /** What the bar is about, for screen readers. */
  label: string;
}

// Where the tones change; the meter's `high` and `low`.
const GOOD = 0.95;
const POOR = 0.5;

/** Green from 95 %, amber from 50 %, red below. */
export function rateTone(rate: number): "ok" | "warn" | "bad" {
  return rate >= GOOD ? "ok" : rate >= POOR ? "warn" : "bad";
}

/** A meter filled to the success rate, on a 0-100 % scale. */
export function RateBar({ rate, label }: RateBarProps) {
  if (rate === null) return <span class="muted">no attempts</span>;
  const pct = Math.round(rate * 100);
  return (
    <span class={`rate ${rateTone(rate)}`} data-rate={pct}>
      <meter
        class="rate-meter"
        min={0}
        max={1}
        low={POOR}
        high={GOOD}
        optimum={1}
        value={rate}
        aria-label={`${label}: ${pct}% successful`}
        title={`${pct}% of attempts successful (green from 95%, red below 50%)`}
      />
      <span class="rate-text">{pct}%</span>
    </span>
  );
}
