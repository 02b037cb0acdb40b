/** `GET /console/kitchen`: the kitchen board. Twin of `GET /api/kitchen/board`. */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { kitchenBoard } from "../../services/console/board.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders the board's three columns. */
export function kitchenPage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const cards = await kitchenBoard(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="Kitchen"
        current="kitchen"
        operator={operator}
        lead="What the kitchen knows, as it learned it from OrderPlaced, OrderPaid and OrderCancelled."
      >
        <Island name="kitchen_board" props={{ initial: { cards } }} />
      </ConsolePage>,
    );
  };
}
