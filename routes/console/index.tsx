/** `GET /console`: the overview. Twin of `GET /api/console/overview`. */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { overviewData } from "../../services/console/overview.ts";
import { type ConsoleRender, serverNow } from "./_guard.ts";

/** Renders the overview from the same read models as its twin. */
export function overviewPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await overviewData(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Overview"
        current="overview"
        operator={operator}
        lead="What needs an operator first; then how old the oldest unpaid promise is, and whether every obligation is closed."
      >
        <Island
          name="console_overview"
          props={{
            initial,
            serverNow: serverNow(),
            board: operator.board ?? { alerts: [], deadLetters: 0 },
          }}
        />
      </ConsolePage>,
    );
  };
}
