/**
 * `GET /console/receivers`: every receiver over the last hour, with its
 * charts. Twin of `GET /api/console/receivers`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { receiverStats } from "../../services/console/receivers.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the receivers from the same read model as the twin. */
export function receiversPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const receivers = await receiverStats(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Receivers"
        current="receivers"
        operator={operator}
        lead="Each receiver over the last hour: how many attempts succeeded, the last error, and its throughput and p95 latency minute by minute."
      >
        <Island name="receivers_list" props={{ initial: { receivers } }} />
      </ConsolePage>,
    );
  };
}
