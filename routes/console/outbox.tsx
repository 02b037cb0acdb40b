/** `GET /console/outbox`: the oldest pending rows. Twin of `GET /api/console/outbox`. */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { outboxAges } from "../../services/console/outbox.ts";
import { type ConsoleRender, serverNow } from "./_guard.ts";

/** Renders the outbox rows, ready, waiting and parked apart, ages ticking. */
export function outboxPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const initial = await outboxAges(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Outbox"
        current="outbox"
        operator={operator}
        lead="Messages that senders still owe the queue, oldest first. A row that waits for a scheduled retry is not late yet; a row parked by the loop guard waits for the sender's next command, or for you to release it."
      >
        <Island
          name="outbox_rows"
          props={{ initial, serverNow: serverNow() }}
        />
      </ConsolePage>,
    );
  };
}
