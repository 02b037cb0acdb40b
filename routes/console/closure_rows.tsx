/**
 * `GET /console/closure/rows?subscriber=&state=`: the obligations behind one
 * cell of the closure matrix. Twin of `GET /api/console/closure/rows`.
 */
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import { ConsolePage } from "../_console_page.tsx";
import { CLOSURE_WORDS, serviceLabel } from "../../format.ts";
import { Island } from "../../islands/_registry.ts";
import { CLOSURE_STATES, closureRows } from "../../services/console/closure.ts";
import { SUBSCRIBERS } from "../../services/routing.ts";
import type { ConsoleRender } from "./_guard.ts";

const query = z.object({
  subscriber: z.enum(SUBSCRIBERS),
  state: z.enum(CLOSURE_STATES),
});

/** Renders one cell's rows. */
export function closureRowsPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const { subscriber, state } = parseOr400(query, c.req.query(), "query");
    const items = await closureRows(sql, operator.sandboxId, subscriber, state);
    const words = CLOSURE_WORDS[state];
    return html(
      <ConsolePage
        title={`${words.label}: ${serviceLabel(subscriber)}`}
        current="closure"
        operator={operator}
        lead={
          <>
            {words.help} <a href="/console/closure">Back to the matrix</a>
          </>
        }
      >
        <Island
          name="closure_rows"
          props={{ subscriber, state, initial: { items } }}
        />
      </ConsolePage>,
    );
  };
}
