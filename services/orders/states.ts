/**
 * Order states, mirrored by the CHECK on orders.orders
 * (migrations/0004_bakery.sql).
 *
 * - `placed`: ordered, not paid. Moved out by the orders service: to `paid`
 *   (PaymentSucceeded), `payment_failed` (PaymentFailed) or `cancelled`.
 * - `payment_failed`: the card was declined; moved out as `placed` is.
 * - `paid`: final for the visitor; no cancel once paid.
 * - `cancelled`: final.
 */
export type OrderState = "placed" | "payment_failed" | "paid" | "cancelled";

/** States in which an order can still be paid or cancelled. */
export const OPEN_STATES: readonly OrderState[] = ["placed", "payment_failed"];
