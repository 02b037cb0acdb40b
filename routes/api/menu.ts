/** `GET /api/menu`: what is for sale, with prices in cents. */
import type { Context } from "hono";
import { priceList } from "../../services/menu.ts";

/** Answers `{ items: [{ sku, name, priceCents }] }`. */
export function menuApi(c: Context): Response {
  return c.json({ items: priceList() });
}
