/** `GET /console`: the overview. Twin of `GET /api/console/overview`. */
import type { Deps } from "../../deps.ts";
import { html } from "../../lib/http/render.ts";
import { ConsolePage } from "../../components/console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { outboxAges } from "../../services/console/outbox.ts";
import { closure } from "../../services/console/closure.ts";
import {
  deadLettersBySubscriber,
  receiverHealth,
} from "../../services/console/deliveries.ts";
import { refundsDue } from "../../services/console/refunds.ts";
import { type ConsoleRender, serverNow } from "./_guard.ts";

/** Renders the overview from the same read models as its twin. */
export function overviewPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const id = operator.sandboxId;
    // 10 oldest rows, as the twin: the overview summarises, the outbox page lists.
    const [outbox, totals, deadLetters, receivers, refunds] = await Promise
      .all([
        outboxAges(sql, id, 10),
        closure(sql, id),
        deadLettersBySubscriber(sql, id),
        receiverHealth(sql, id),
        refundsDue(sql, id),
      ]);
    return html(
      <ConsolePage
        title="Overview"
        current="overview"
        operator={operator}
        lead="How old the oldest unpaid promise is, what is dead, and whether every obligation is closed."
      >
        <Island
          name="console_overview"
          props={{
            initial: {
              outbox,
              closure: totals,
              deadLetters,
              receivers,
              refunds,
            },
            serverNow: serverNow(),
          }}
        />
      </ConsolePage>,
    );
  };
}
