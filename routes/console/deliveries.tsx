/**
 * `GET /console/deliveries?state=`: deliveries by state, with counts per
 * tab. Twin of `GET /api/console/deliveries?state=`.
 */
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { DELIVERY_TABS } from "../../islands/deliveries_list.tsx";
import {
  deliveryCounts,
  listDeliveries,
} from "../../services/console/deliveries.ts";
import type { ConsoleRender } from "./_guard.ts";

const query = z.object({
  state: z.enum(
    DELIVERY_TABS.map((t) => t.state) as [
      typeof DELIVERY_TABS[number]["state"],
      ...typeof DELIVERY_TABS[number]["state"][],
    ],
  ).default(""),
});

/** Renders the tabs and the deliveries of the chosen state. */
export function deliveriesPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const { state } = parseOr400(query, c.req.query(), "query");
    const id = operator.sandboxId;
    const [counts, items] = await Promise.all([
      deliveryCounts(sql, id),
      listDeliveries(sql, id, state ? { state } : {}),
    ]);
    const tab = DELIVERY_TABS.find((t) => t.state === state)!;
    return html(
      <ConsolePage
        title={state ? `Deliveries: ${tab.label.toLowerCase()}` : "Deliveries"}
        current="deliveries"
        operator={operator}
        lead="One delivery per message and receiver. Open one for its attempts and envelope."
      >
        <Island
          name="deliveries_list"
          props={{ state, initial: { counts, items } }}
        />
      </ConsolePage>,
    );
  };
}
