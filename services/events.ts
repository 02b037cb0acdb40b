/**
 * The bakery's messages: each type's payload, as zod schemas. Payloads are
 * self-contained (a receiver needs nothing but the message to apply it), and
 * every message carries the order's version as `aggregateVersion`.
 */
import { z } from "zod";

const line = z.object({
  sku: z.string(),
  name: z.string(),
  qty: z.number().int(),
  unitCents: z.number().int(),
});

const order = z.object({
  orderId: z.string().uuid(),
  lines: z.array(line),
  totalCents: z.number().int(),
  customer: z.object({ name: z.string(), email: z.string() }),
  fulfilment: z.enum(["pickup", "delivery"]),
  day: z.string(),
});

export const payloads = {
  OrderPlaced: order,
  OrderPaid: order.extend({ paymentId: z.string(), paidAt: z.string() }),
  OrderCancelled: order.extend({ reason: z.string() }),
  PaymentSucceeded: z.object({
    paymentId: z.string(),
    orderId: z.string().uuid(),
    amountCents: z.number().int(),
  }),
  PaymentFailed: z.object({
    paymentId: z.string(),
    orderId: z.string().uuid(),
    reason: z.string(),
  }),
} as const;

export type EventType = keyof typeof payloads;
export type Payload<T extends EventType> = z.output<typeof payloads[T]>;
export type OrderSnapshot = z.output<typeof order>;
export type Line = z.output<typeof line>;

/** Parses a payload of a known type; a malformed one is a refusal upstream. */
export function parsePayload<T extends EventType>(
  type: T,
  payload: unknown,
): Payload<T> {
  return payloads[type].parse(payload) as Payload<T>;
}
