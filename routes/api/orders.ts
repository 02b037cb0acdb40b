/**
 * The storefront's JSON API: place, read, pay and cancel an order. Thin:
 * parse with zod, call the orders or billing service, answer.
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400, readJson, text } from "../../kit/http/validate.ts";
import { placeOrderSchema } from "../../services/orders/schema.ts";
import { placeOrder } from "../../services/orders/place.ts";
import { placedTraceparent } from "../../services/timeline.ts";
import { contextOf, inSpan, tracing } from "../../lib/trace/mod.ts";
import { cancelOrder } from "../../services/orders/cancel.ts";
import { orderView } from "../../services/timeline.ts";
import { ensureSession, requireSession } from "./session.ts";

export const paySchema = z.object({
  // Digits as typed (spaces and dashes allowed): the test checkout looks
  // the number up, and no other text may reach that lookup.
  card: text().trim().max(30, "at most 30 characters").regex(
    /^[0-9 -]*$/,
    "a card number: digits, spaces and dashes only",
  ).optional(),
}).strict();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The `:orderId` of the path; anything that is not an order id is a 404. */
export function orderIdParam(c: Context): string {
  const id = c.req.param("orderId") ?? "";
  if (!UUID.test(id)) throw new HttpError(404, `no order ${id.slice(0, 60)}`);
  return id;
}

export function orderRoutes(deps: Deps) {
  const view = async (c: Context) => {
    const session = requireSession(c);
    const id = orderIdParam(c);
    const order = await orderView(deps.sql, session.sandboxId, id);
    if (!order) throw new HttpError(404, `no order ${id}`);
    return { session, order };
  };
  return {
    place: async (c: Context) => {
      const input = parseOr400(placeOrderSchema, await readJson(c.req.raw));
      // Only now, with the whole body valid: a guest's sandbox and session
      // are committed, and its cookie set, by the next line, and a request
      // that fails validation must leave nothing behind.
      const session = await ensureSession(c, deps);
      const placed = await placeOrder(deps.sql, session.sandboxId, input);
      return c.json(
        {
          orderId: placed.orderId,
          state: placed.state,
          totalCents: placed.totalCents,
        },
        placed.created ? 201 : 200,
      );
    },
    read: async (c: Context) => {
      const { order } = await view(c);
      return c.json(order);
    },
    pay: async (c: Context) => {
      const body = c.req.header("content-length") === "0"
        ? {}
        : await readJson(c.req.raw);
      const { card } = parseOr400(paySchema, body);
      const { session, order } = await view(c);
      if (order.state !== "placed" && order.state !== "payment_failed") {
        throw new HttpError(
          409,
          `order ${order.orderId} is ${order.state}; it cannot be paid`,
        );
      }
      // Paying goes on in the order's trace (lib/trace): a paid order is
      // one trace, from the request that placed it to every receiver.
      const placed = tracing
        ? await placedTraceparent(deps.sql, session.sandboxId, order.orderId)
        : undefined;
      const parent = placed ? contextOf(placed) : undefined;
      const result = await inSpan("pay", {
        parent,
        attributes: { "bakery.order": order.orderId },
      }, () =>
        deps.gateway.pay({
          sandboxId: session.sandboxId,
          orderId: order.orderId,
          amountCents: order.totalCents,
          card,
          returnUrl: new URL(`/orders/${order.orderId}`, c.req.url).toString(),
        }));
      return c.json(result, 202);
    },
    cancel: async (c: Context) => {
      const session = requireSession(c);
      const result = await cancelOrder(
        deps.sql,
        session.sandboxId,
        orderIdParam(c),
      );
      return c.json(result, 202);
    },
  };
}
