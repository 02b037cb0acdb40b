/**
 * What a redrive's dry run says each dead letter would do at its receiver
 * (its real apply, rolled back): the counts by outcome, and the first
 * messages with the receiver's own words. Shown before the operator
 * confirms, so that "not yet" or "refused" is seen before anything is sent.
 */
import type { DryRunAnswer } from "./_console_types.ts";
import { serviceLabel } from "../format.ts";

export type RedrivePreview = NonNullable<DryRunAnswer["preview"]>;

const WORDS: Record<RedrivePreview[number]["outcome"], [string, string]> = {
  apply: ["would apply", "badge-ok"],
  duplicate: ["applied already", "badge-plain"],
  not_yet: ["not yet", "badge-warn"],
  refused: ["would be refused", "badge-bad"],
  fail: ["would fail", "badge-bad"],
  beyond_horizon: ["past the replay horizon", "badge-warn"],
};

/** Shown at most; the counts cover every message previewed. */
const LISTED = 8;

/** The preview of a redrive, or nothing when there is none. */
export function RedrivePreviewList(
  props: { preview: RedrivePreview; testid: string },
) {
  const { preview } = props;
  if (preview.length === 0) return null;
  const counts = new Map<string, number>();
  for (const p of preview) {
    counts.set(p.outcome, (counts.get(p.outcome) ?? 0) + 1);
  }
  return (
    <div class="redrive-preview" data-testid={props.testid}>
      <p>
        At their receivers, tried and rolled back:{" "}
        {[...counts].map(([outcome, n], i) => (
          <span key={outcome}>
            {i > 0 && ", "}
            {n} {WORDS[outcome as keyof typeof WORDS][0]}
          </span>
        ))}
        .
      </p>
      <ul>
        {preview.slice(0, LISTED).map((p) => {
          const [words, tone] = WORDS[p.outcome];
          return (
            <li key={p.id} data-testid={`${props.testid}-${p.id}`}>
              <a href={`/console/deliveries/${p.id}`}>#{p.id}</a> to{" "}
              {serviceLabel(p.subscriber)}:{" "}
              <span class={`badge ${tone}`}>{words}</span>
              {p.outcome !== "apply" && (
                <>
                  {" "}
                  <span class="error-text">{p.detail}</span>
                </>
              )}
            </li>
          );
        })}
      </ul>
      {preview.length > LISTED && (
        <p class="muted">and {preview.length - LISTED} more previewed</p>
      )}
    </div>
  );
}
