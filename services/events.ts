/**
 * The bakery's messages: each type's payload, as zod schemas. Payloads are
 * self-contained (a receiver needs nothing but the message to apply it), and
 * every message carries the order's version as `aggregateVersion`.
 *
 * The schemas are what every receiver checks before it applies anything,
 * and what a superseding copy is checked against before it is sent
 * (services/console/supersede.ts): one schema, so that the console never
 * sends what a receiver would refuse. They are strict at every depth (an
 * unknown field is named, never dropped) and bounded by what the receivers
 * store: a day PostgreSQL's `date` takes, quantities and cents that fit the
 * storefront's limits and an `integer` column, well-formed text.
 */
import { z } from "zod";
import { text } from "../kit/http/validate.ts";
import { Refused } from "../lib/inbox/mod.ts";
import { MAX_LINES, MAX_QTY } from "./orders/schema.ts";

/**
 * The dearest single item a message may price: €1,000, about 140 times the
 * dearest item on the menu (services/menu.ts), so a price change never
 * needs this changed, and 20 lines of 50 at this price (10^8 cents) still
 * fit an `integer` column (2^31 - 1) with room to spare.
 */
export const MAX_UNIT_CENTS = 100_000;
/** The largest order total: every line at its most (see MAX_UNIT_CENTS). */
export const MAX_TOTAL_CENTS = MAX_LINES * MAX_QTY * MAX_UNIT_CENTS;

const cents = (max: number) =>
  z.number().int("whole cents").min(0, "at least 0").max(max, `at most ${max}`);

/**
 * A baking day: YYYY-MM-DD, a real date, within years PostgreSQL's `date`
 * and the receivers take. Not the storefront's window (today to 60 days
 * ahead): a message, and its corrected copy, may be older than that.
 */
const day = z.iso.date({ error: "a date such as 2026-12-01", abort: true })
  .refine(
    (d) => d >= "2000-01-01" && d <= "2999-12-31" && !isNaN(Date.parse(d)),
    "a day between 2000-01-01 and 2999-12-31",
  );

const line = z.strictObject({
  sku: text().min(1, "required").max(60, "at most 60 characters"),
  name: text().min(1, "required").max(100, "at most 100 characters"),
  qty: z.number().int("a whole number").min(1, "at least 1").max(
    MAX_QTY,
    `at most ${MAX_QTY}`,
  ),
  unitCents: cents(MAX_UNIT_CENTS),
});

const orderShape = {
  orderId: z.string().uuid(),
  // Each product once, as the storefront takes it: the schedule books one
  // row per order and product, and two lines of one product would fail
  // its insert, a 500 retried until dead instead of a refusal.
  lines: z.array(line).min(1, "at least one line").max(
    MAX_LINES,
    `at most ${MAX_LINES} lines`,
  ).refine(
    (lines) => new Set(lines.map((l) => l.sku)).size === lines.length,
    "each product once",
  ),
  totalCents: cents(MAX_TOTAL_CENTS),
  customer: z.strictObject({
    name: text().min(1, "required").max(100, "at most 100 characters"),
    email: text().max(254, "at most 254 characters").pipe(
      z.email("not an email address"),
    ),
  }),
  fulfilment: z.enum(["pickup", "delivery"]),
  day,
};

/**
 * The total is what the lines add up to, as the orders service wrote it.
 * Checked only once every line and the total are valid on their own, so
 * that one wrong quantity is named once.
 */
function totalAddsUp<S extends z.ZodType<z.output<typeof orderObject>>>(
  schema: S,
) {
  return schema.refine(
    (o) =>
      o.lines.reduce((n, l) => n + l.qty * l.unitCents, 0) === o.totalCents,
    {
      path: ["totalCents"],
      message: "must be what the lines add up to (qty × unitCents)",
      when: (payload) => payload.issues.length === 0,
    },
  );
}

const orderObject = z.strictObject(orderShape);
const order = totalAddsUp(orderObject);
const reason = text().min(1, "required").max(1000, "at most 1000 characters");
const paymentId = text().min(1, "required").max(255, "at most 255 characters");

export const payloads = {
  OrderPlaced: order,
  OrderPaid: totalAddsUp(z.strictObject({
    ...orderShape,
    paymentId,
    paidAt: z.iso.datetime({ offset: true }),
  })),
  OrderCancelled: totalAddsUp(z.strictObject({ ...orderShape, reason })),
  PaymentSucceeded: z.strictObject({
    paymentId,
    orderId: z.string().uuid(),
    amountCents: cents(MAX_TOTAL_CENTS),
  }),
  PaymentFailed: z.strictObject({
    paymentId,
    orderId: z.string().uuid(),
    reason,
  }),
} as const;

export type EventType = keyof typeof payloads;
export type Payload<T extends EventType> = z.output<typeof payloads[T]>;
export type OrderSnapshot = z.output<typeof order>;
export type Line = z.output<typeof line>;

/**
 * Parses a payload of a known type. A malformed one is Refused (422, with
 * a refusal row, lib/inbox), naming the field that failed: it cannot
 * become well formed by being sent again, so it is never retried.
 */
export function parsePayload<T extends EventType>(
  type: T,
  payload: unknown,
): Payload<T> {
  const result = payloads[type].safeParse(payload);
  if (result.success) return result.data as Payload<T>;
  const [first, ...more] = result.error.issues;
  const path = first.code === "unrecognized_keys"
    ? [...first.path, first.keys[0]]
    : first.path;
  const others = more.length > 0 ? ` (and ${more.length} more)` : "";
  throw new Refused(
    `malformed: ${path.map(String).join(".") || "(the whole payload)"}: ${
      first.code === "unrecognized_keys" ? "unknown field" : first.message
    }${others}`,
  );
}
