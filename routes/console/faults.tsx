/**
 * `GET /console/faults`: the fault switches, and a pause button per
 * receiver. Twins: `GET /api/console/faults`, and for each receiver
 * `GET /api/console/receivers/:name`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { readFaults } from "../../services/console/faults.ts";
import { FAULTS } from "../../services/faults.ts";
import { pausedReceivers } from "../../services/console/pauses.ts";
import { LABELS, SUBSCRIBERS } from "../../services/routing.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders a switch per fault of services/faults.ts, and the pauses. */
export function faultsPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const [initial, paused] = await Promise.all([
      readFaults(sql, operator.sandboxId),
      pausedReceivers(sql, operator.sandboxId),
    ]);
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
        <h2>Pause a receiver</h2>
        <Island
          name="receiver_pauses"
          props={{
            receivers: SUBSCRIBERS.map((name) => ({
              name,
              label: LABELS[name],
            })),
            initial: paused,
          }}
        />
      </ConsolePage>,
    );
  };
}
