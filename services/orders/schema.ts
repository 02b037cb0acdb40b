/**
 * What the storefront may ask of the orders service, as zod schemas. The
 * server's word is final: prices come from the menu, never from the request.
 */
import { z } from "zod";
import { menuItem } from "../menu.ts";
import { text } from "../../kit/http/validate.ts";

/** More of one item than a kitchen would take from one customer. */
export const MAX_QTY = 50;
/** Lines of one order: more products than the menu has, with room to grow. */
export const MAX_LINES = 20;

export const placeOrderSchema = z.object({
  items: z.array(
    z.object({
      sku: text().max(60).refine((sku) => menuItem(sku) !== undefined, {
        message: "not on the menu",
      }),
      qty: z.number().int("a whole number").min(1, "at least 1").max(
        MAX_QTY,
        `at most ${MAX_QTY}`,
      ),
    }).strict(),
  ).min(1, "at least one item").max(
    MAX_LINES,
    `at most ${MAX_LINES} lines`,
  )
    .refine((items) => new Set(items.map((i) => i.sku)).size === items.length, {
      message: "each product once; use qty for more",
    }),
  customer: z.object({
    name: text().trim().min(1, "required").max(
      100,
      "at most 100 characters",
    ),
    email: text().trim().max(254, "at most 254 characters").pipe(
      z.email("not an email address"),
    ),
  }).strict(),
  fulfilment: z.enum(["pickup", "delivery"]),
  /** The day to bake for; today (UTC) when omitted. */
  day: z.iso.date("a date such as 2026-12-01").refine(
    // A day behind UTC may still be today for the visitor.
    (day) =>
      day >= new Date(Date.now() - 86_400_000).toISOString().slice(0, 10),
    "today or a later day",
  ).refine(
    (day) =>
      day <= new Date(Date.now() + 60 * 86_400_000).toISOString().slice(0, 10),
    "at most 60 days ahead",
  ).optional(),
  idempotencyKey: text().min(8, "at least 8 characters").max(
    200,
    "at most 200 characters",
  ).regex(/^[A-Za-z0-9_.:-]+$/, "letters, digits and _ . : - only"),
}).strict();

export type PlaceOrderInput = z.output<typeof placeOrderSchema>;
