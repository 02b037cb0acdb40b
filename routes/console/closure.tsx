/**
 * `GET /console/closure`: receivers × closure states, each cell a link to its
 * rows, with what each state means. Twin of `GET /api/console/closure`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { CLOSURE_KEYS, CLOSURE_WORDS } from "../../format.ts";
import { Island } from "../../islands/_registry.ts";
import { closure } from "../../services/console/closure.ts";
import type { Retention } from "../../services/console/contracts.ts";
import { retentionSettings } from "../../services/retention.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the matrix and the legend. */
export function closurePage({ sql, config }: Deps): ConsoleRender {
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
          <Kept retention={retentionSettings(config)} />
        </section>
      </ConsolePage>,
    );
  };
}

/** What is kept of finished work, and for how long. */
function Kept({ retention: r }: { retention: Retention }) {
  if (!r.on) {
    return (
      <p data-testid="retention">
        Nothing finished is removed (RETENTION=off): every delivery, attempt and
        inbox row stays until the sandbox is wiped.
      </p>
    );
  }
  return (
    <p data-testid="retention">
      Done deliveries with their attempts, the queue's copies of messages and
      the inboxes' rows are removed <strong>{r.keptDays} days</strong>{" "}
      after they finish: the replay horizon of {r.replayHorizonDays}{" "}
      days, past which a receiver refuses a message it has not seen, plus a
      margin of{" "}
      {r.marginDays}. The closed counts stay. Dead and refused deliveries, those
      an operator acted on, and the inbox row of any message still open or dead
      stay as long as they are.
    </p>
  );
}
