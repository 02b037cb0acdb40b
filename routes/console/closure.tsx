/**
 * `GET /console/closure`: receivers × closure states, each cell a link to its
 * rows, with what each state means. Twin of `GET /api/console/closure`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../../components/console_page.tsx";
import {
  CLOSURE_KEYS,
  CLOSURE_WORDS,
} from "../../components/console_format.ts";
import { Island } from "../../islands/_registry.ts";
import { closure } from "../../services/console/closure.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the matrix and the legend. */
export function closurePage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await closure(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Closure"
        current="closure"
        operator={operator}
        lead="Every obligation (message × receiver): what the sender did, joined to what the receiver's inbox holds. When all is well, everything ends closed or refused."
      >
        <Island name="closure_matrix" props={{ initial }} />
        <section class="panel legend" aria-labelledby="legend-title">
          <h2 id="legend-title">What the states mean</h2>
          <dl data-testid="closure-legend">
            {CLOSURE_KEYS.map((state) => (
              <div key={state}>
                <dt>{CLOSURE_WORDS[state].label}</dt>
                <dd>{CLOSURE_WORDS[state].help}</dd>
              </div>
            ))}
          </dl>
        </section>
      </ConsolePage>,
    );
  };
}
