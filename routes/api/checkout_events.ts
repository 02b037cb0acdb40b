/**
 * The console's JSON for the test checkout's events that the webhook has
 * not taken: list them, and send one that gave up again.
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import {
  sendCheckoutEventAgain,
  undeliveredCheckoutEvents,
} from "../../services/console/checkout_events.ts";
import { requireOperator } from "./console.ts";

/** The test checkout's event ids (services/billing/gateway.ts). */
export const eventId = z.string().regex(
  /^evt_[A-Za-z0-9_]{1,60}$/,
  "an event id",
);

export function checkoutEventRoutes(deps: Deps) {
  const { sql } = deps;
  return {
    list: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await undeliveredCheckoutEvents(sql, sandboxId));
    },
    sendAgain: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const { id } = parseOr400(
        z.object({ id: eventId }),
        { id: c.req.param("id") },
        "path",
      );
      if (!await sendCheckoutEventAgain(sql, sandboxId, id, actor)) {
        throw new HttpError(404, "no checkout event that gave up by that id");
      }
      deps.gateway.wake();
      deps.feed.emitLocal(sandboxId);
      return c.json({ eventId: id, state: "pending" }, 202);
    },
  };
}
