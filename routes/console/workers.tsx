/**
 * `GET /console/workers`: every process of relays or consumers, live or
 * silent, by its heartbeat. Workers are shared infrastructure: every
 * operator sees them all, whatever the sandbox, and nothing here acts on
 * them. Twin of `GET /api/console/workers`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { workersData } from "../../services/console/workers.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the workers from the same read model as the twin. */
export function workersPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await workersData(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Workers"
        current="workers"
        operator={operator}
        lead="Every process that runs relays or consumers, by its heartbeat. A worker is silent after three missed beats; one stopped cleanly leaves the list. Shared by every sandbox, and read-only."
      >
        <Island name="workers_list" props={{ initial }} />
      </ConsolePage>,
    );
  };
}
