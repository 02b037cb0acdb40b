/**
 * `GET /console/deliveries/:id`: one delivery with its envelope, attempts and
 * operator actions. Twin of `GET /api/console/deliveries/:id`.
 */
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import { Island } from "../../islands/_registry.ts";
import { deliveryDetail } from "../../services/console/deliveries.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Renders one delivery; another sandbox's id is a 404 like a missing one. */
export function deliveryPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const id = Number(c.req.param("id"));
    if (!Number.isSafeInteger(id) || id <= 0) {
      throw new HttpError(404, "no such delivery");
    }
    const initial = await deliveryDetail(sql, operator.sandboxId, id);
    if (!initial) throw new HttpError(404, "no such delivery");
    return html(
      <ConsolePage
        title={`Delivery ${id}`}
        current="deliveries"
        operator={operator}
        lead={<a href="/console/deliveries">All deliveries</a>}
      >
        <Island name="delivery_detail" props={{ id, initial }} />
      </ConsolePage>,
    );
  };
}
