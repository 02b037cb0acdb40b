/**
 * Delivery states, mirrored by the CHECK on queue.deliveries
 * (lib/ledger/migrations/0001_queue.sql).
 *
 * - `pending`: due at `next_attempt_at`. Moved out by a consumer's claim.
 * - `in_flight`: a consumer holds the lease. Moved out by that consumer (to
 *   `done`, back to `pending` for a retry, or to `dead`), or by another
 *   consumer's claim once the lease has expired.
 * - `done`: the subscriber answered 2xx. Final.
 * - `dead`: retries exhausted, or refused by the subscriber (422). Moved out
 *   by an operator: redrive (to `pending`) or refuse.
 * - `refused`: closed by an operator with a reason. Final.
 * - `held`: its subscriber keeps each aggregate's order, and an earlier
 *   delivery of the same aggregate to it is dead (`held_behind`). Moved
 *   back to `pending` when that one is done or refused.
 */
export type DeliveryState =
  | "pending"
  | "in_flight"
  | "done"
  | "dead"
  | "refused"
  | "held";

export const DELIVERY_STATES: readonly DeliveryState[] = [
  "pending",
  "in_flight",
  "done",
  "dead",
  "refused",
  "held",
];
