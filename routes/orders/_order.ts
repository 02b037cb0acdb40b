/**
 * What both order pages need first: the visitor's session, the order id of
 * the path, and the order as `orderView` reads it in the visitor's sandbox.
 * Failures are HttpErrors, which the app renders as HTML error pages.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { orderIdParam } from "../api/orders.ts";
import { requireSession } from "../api/session.ts";
import { type OrderView, orderView } from "../../services/timeline.ts";

/** The order of the page and the token its islands send with changes. */
export interface LoadedOrder {
  view: OrderView;
  csrfToken?: string;
}

/**
 * Loads the order of `/orders/:orderId...`: 401 without a session, 404 for
 * an id that is malformed, unknown, or another sandbox's (the same answer
 * for all three, so ids cannot be probed).
 */
export async function loadOrder(c: Context, deps: Deps): Promise<LoadedOrder> {
  // requireSession's own message is for scripts; a person who followed a
  // link here needs to know how to get a session that owns orders.
  if (!c.get("session")) {
    throw new HttpError(
      401,
      "Orders are kept with the visitor who placed them. Place an order " +
        "first, or sign in with the session you ordered in, to see it here.",
    );
  }
  const session = requireSession(c);
  const id = orderIdParam(c);
  const view = await orderView(deps.sql, session.sandboxId, id);
  if (!view) {
    throw new HttpError(
      404,
      "There is no such order here. It may belong to another visitor, or " +
        "the sandbox it was in has been wiped.",
    );
  }
  return { view, csrfToken: c.get("csrfToken") || undefined };
}

/**
 * Marks a page as private and fresh: it shows one visitor's order, and a
 * copy from a cache would show a state the order has left.
 */
export function noStore(response: Response): Response {
  response.headers.set("cache-control", "private, no-store");
  return response;
}
