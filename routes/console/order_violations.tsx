/**
 * `GET /console/order-violations`: the messages that reached a receiver
 * after a later version of their aggregate. Twin of
 * `GET /api/console/order-violations`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { orderViolations } from "../../services/console/violations.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the newest violations from the same read model as the twin. */
export function orderViolationsPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await orderViolations(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Order violations"
        current="order-violations"
        operator={operator}
        lead="Messages that arrived at a receiver after a later version of the same order had been applied there. The receiver answered as it does for a stale instruction; these rows say the delivery came out of order."
      >
        <Island name="order_violations_list" props={{ initial }} />
      </ConsolePage>,
    );
  };
}
