/**
 * A receiver's recent success rate as a small SVG bar with the percentage
 * beside it. Widths are SVG attributes, not inline styles, so the page needs
 * no `style-src 'unsafe-inline'`.
 */

/** Props: the rate from 0 to 1, or null when there were no attempts. */
export interface RateBarProps {
  rate: number | null;
  /** What the bar is about, for screen readers. */
  label: string;
}

/** Green from 95 %, amber from 50 %, red below. */
export function rateTone(rate: number): "ok" | "warn" | "bad" {
  return rate >= 0.95 ? "ok" : rate >= 0.5 ? "warn" : "bad";
}

/** A 100-unit bar filled to the success rate. */
export function RateBar({ rate, label }: RateBarProps) {
  if (rate === null) return <span class="muted">no attempts</span>;
  const pct = Math.round(rate * 100);
  return (
    <span class="rate" data-rate={pct}>
      <svg
        class="rate-bar"
        viewBox="0 0 100 8"
        width="100"
        height="8"
        role="img"
        aria-label={`${label}: ${pct}% successful`}
      >
        <rect class="rate-track" width="100" height="8" rx="4" />
        <rect
          class={`rate-fill ${rateTone(rate)}`}
          width={Math.max(pct, pct > 0 ? 4 : 0)}
          height="8"
          rx="4"
        />
      </svg>
      <span class="rate-text">{pct}%</span>
    </span>
  );
}
