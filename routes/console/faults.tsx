/** `GET /console/faults`: the fault switches. Twin of `GET /api/console/faults`. */
import type { Deps } from "../../deps.ts";
import { html } from "../../lib/http/render.ts";
import { ConsolePage } from "../../components/console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { readFaults } from "../../services/console/faults.ts";
import { FAULTS } from "../../services/faults.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders a switch per fault of services/faults.ts. */
export function faultsPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await readFaults(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Faults"
        current="faults"
        operator={operator}
        lead="Break things on purpose, in your sandbox only, and watch nothing get lost."
      >
        <Island
          name="fault_switches"
          props={{ faults: [...FAULTS], initial }}
        />
      </ConsolePage>,
    );
  };
}
