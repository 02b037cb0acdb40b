/**
 * The storefront's order pages: an order with its live timeline, and its
 * checkout. `createApp` calls `registerOrderPages`.
 */
import type { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { orderPage } from "./order_page.tsx";
import { payPage } from "./pay_page.tsx";

/**
 * Registers `GET /orders/:orderId` and `GET /orders/:orderId/pay` on `app`.
 * Both answer 401 without a session and 404 for another sandbox's order;
 * the app renders those as HTML pages for browsers.
 *
 * @example
 * ```ts
 * const app = new Hono();
 * registerOrderPages(app, deps);
 * ```
 */
export function registerOrderPages(app: Hono, deps: Deps): void {
  app.get("/orders/:orderId", (c) => orderPage(c, deps));
  app.get("/orders/:orderId/pay", (c) => payPage(c, deps));
}
