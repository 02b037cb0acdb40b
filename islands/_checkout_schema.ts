/**
 * The order request the checkout form sends to `POST /api/orders`, as a zod
 * schema. The browser checks it before posting; its issue paths
 * (`customer.email`) are the ones a 400 from the server names, so one piece
 * of code puts either kind of message beside its field.
 */
import * as z from "zod";
import { MAX_QTY } from "./_cart_store.ts";

/** How far ahead a day may be chosen; the server allows the same. */
export const MAX_DAYS_AHEAD = 60;

/**
 * The schema, for a customer whose local date is `today` (`YYYY-MM-DD`): a
 * day before it, or more than `MAX_DAYS_AHEAD` after it, cannot be chosen.
 */
export function orderRequestSchema(today: string) {
  const last = addDays(today, MAX_DAYS_AHEAD);
  return z.object({
    items: z.array(z.object({
      sku: z.string().min(1),
      qty: z.number().int().min(1).max(
        MAX_QTY,
        `At most ${MAX_QTY} of one item.`,
      ),
    })).min(1, "Your basket is empty."),
    customer: z.object({
      name: z.string().trim().min(1, "Please tell us your name.").max(
        100,
        "Please keep the name under 100 characters.",
      ),
      email: z.string().trim().max(254, "Please use a shorter address.").pipe(
        z.email("That does not look like an email address."),
      ),
    }),
    fulfilment: z.enum(["pickup", "delivery"], {
      error: "Choose pickup or delivery.",
    }),
    day: z.iso.date({ error: "Choose a day." })
      .refine((day) => day >= today, "Choose today or a later day.")
      .refine(
        (day) => day <= last,
        `We take orders up to ${MAX_DAYS_AHEAD} days ahead.`,
      ),
    idempotencyKey: z.string().min(16).max(200),
  });
}

/** A valid order request. */
export type OrderRequest = z.output<ReturnType<typeof orderRequestSchema>>;

/** Today's date in the browser's time zone, as `YYYY-MM-DD`. */
export function localToday(now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${
    pad(now.getDate())
  }`;
}

/** `YYYY-MM-DD` plus `days` calendar days. */
export function addDays(day: string, days: number): string {
  const [y, m, d] = day.split("-").map(Number);
  return localToday(new Date(y, m - 1, d + days));
}
