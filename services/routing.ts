/**
 * The routing table: which subscribers get which event type. The relay's
 * queue reads it when it publishes; OrderPaid goes to all six receivers.
 */
import type { Routing } from "../lib/ledger/mod.ts";
import { SERVICE_LABELS } from "../format.ts";

export const RECEIVERS = [
  "kitchen",
  "schedule",
  "dispatch",
  "crm",
  "customers",
  "receipts",
] as const;

export type Receiver = typeof RECEIVERS[number];

/** Every subscriber: the six receivers, and orders (for payments). */
export const SUBSCRIBERS = [...RECEIVERS, "orders"] as const;
export type SubscriberName = typeof SUBSCRIBERS[number];

export const ROUTING: Routing = {
  OrderPlaced: ["kitchen", "schedule", "customers"],
  OrderPaid: [...RECEIVERS],
  OrderCancelled: ["kitchen", "schedule", "dispatch", "crm", "customers"],
  PaymentSucceeded: ["orders"],
  PaymentFailed: ["orders"],
};

/** Services with an outbox, drained by the relay. */
export const SENDERS = ["orders", "billing"] as const;

/**
 * How people read a subscriber's name: "Kitchen answered 503" (format.ts
 * holds the table, which the pages share with the islands).
 */
export const LABELS: Record<SubscriberName, string> = SERVICE_LABELS;
