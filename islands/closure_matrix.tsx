/**
 * The closure matrix, live: receivers down, closure states across, each cell
 * a link to the obligations behind it. A red banner while any mismatch
 * exists. Twin of `GET /api/console/closure`.
 */
import {
  CLOSURE_KEYS,
  CLOSURE_WORDS,
  serviceLabel,
  type Tone,
} from "../format.ts";
import { MismatchAlarm } from "./_closure_totals.tsx";
import { useLive } from "./_live.ts";
import type { ClosureCounts, ClosureData } from "./_console_types.ts";

/** Props: the server's render of the twin. */
export interface ClosureMatrixProps {
  initial: ClosureData;
}

function cellClass(n: number, tone: Tone): string {
  if (n === 0) return "cell zero";
  return tone === "plain" ? "cell" : `cell tone-${tone}`;
}

/** Receivers × states, with totals. */
export default function ClosureMatrix(props: ClosureMatrixProps) {
  const live = useLive("/api/console/closure", props.initial);
  const { totals, bySubscriber } = live.data.value;

  const row = (name: string, counts: ClosureCounts, link: boolean) =>
    CLOSURE_KEYS.map((state) => {
      const n = counts[state];
      const words = CLOSURE_WORDS[state];
      return (
        <td key={state} class="num">
          {link
            ? (
              <a
                class={cellClass(n, words.tone)}
                href={`/console/closure/rows?subscriber=${
                  encodeURIComponent(name)
                }&state=${state}`}
                title={`${words.label} for ${
                  serviceLabel(name)
                }: ${words.help}`}
                data-testid={`closure-cell-${name}-${state}`}
                data-count={n}
              >
                {n}
              </a>
            )
            : (
              <span
                class={cellClass(n, words.tone)}
                data-testid={`closure-total-${state}`}
                data-count={n}
              >
                {n}
              </span>
            )}
        </td>
      );
    });

  return (
    <div class="closure">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <MismatchAlarm mismatch={totals.mismatch} />
      <div class="table-wrap" tabIndex={0}>
        <table class="table matrix" data-testid="closure-matrix">
          <thead>
            <tr>
              <th>Receiver</th>
              {CLOSURE_KEYS.map((state) => (
                <th key={state} class="num" title={CLOSURE_WORDS[state].help}>
                  {CLOSURE_WORDS[state].label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {Object.entries(bySubscriber).map(([name, counts]) => (
              <tr key={name} data-testid={`closure-row-${name}`}>
                <th scope="row">{serviceLabel(name)}</th>
                {row(name, counts, true)}
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr data-testid="closure-row-total">
              <th scope="row">All</th>
              {row("all", totals, false)}
            </tr>
          </tfoot>
        </table>
      </div>
    </div>
  );
}
