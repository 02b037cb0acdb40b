/**
 * Closure totals as a strip of tiles, one per state, each a link to the
 * matrix; and the alarm banner for mismatches. Pure, for the overview and
 * the closure page alike.
 */
import { CLOSURE_KEYS, CLOSURE_WORDS } from "../format.ts";
import type { ClosureCounts } from "../services/console/closure.ts";

/** Props: the totals of `closure()`. */
export interface ClosureTotalsProps {
  totals: ClosureCounts;
}

/** One tile per closure state with its count. */
export function ClosureTotals({ totals }: ClosureTotalsProps) {
  return (
    <ul class="tiles closure-totals" data-testid="closure-totals">
      {CLOSURE_KEYS.map((state) => {
        const n = totals[state];
        const words = CLOSURE_WORDS[state];
        return (
          <li key={state} class="tile" title={words.help}>
            <a href="/console/closure" data-testid={`closure-total-${state}`}>
              <span class="tile-label">{words.label}</span>
              <span
                class={n > 0
                  ? `tile-value ${badgeTone(words.tone)}`
                  : "tile-value"}
                data-count={n}
              >
                {n}
              </span>
            </a>
          </li>
        );
      })}
    </ul>
  );
}

// Counts keep the ink colour unless they matter: then the badge's colour.
function badgeTone(tone: string): string {
  return tone === "plain" ? "" : `tone-${tone}`;
}

/** Props: how many obligations are acknowledged without an inbox row. */
export interface MismatchAlarmProps {
  mismatch: number;
}

/**
 * A red banner while any obligation is a mismatch: the receiver said yes,
 * but nothing it did is recorded. Nothing at all when there is none.
 */
export function MismatchAlarm({ mismatch }: MismatchAlarmProps) {
  if (mismatch <= 0) return null;
  return (
    <div class="alarm" role="alert" data-testid="closure-alarm">
      <strong>
        {mismatch === 1 ? "1 mismatch" : `${mismatch} mismatches`}
      </strong>{" "}
      A receiver acknowledged {mismatch === 1 ? "a message" : "messages"}{" "}
      without an inbox row behind the acknowledgement.{" "}
      <a href="/console/closure">See which</a>
    </div>
  );
}
