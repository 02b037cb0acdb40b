/**
 * Outbox row states, mirrored by the CHECK in platform.create_outbox
 * (migrations/0002_outbox_inbox.sql).
 *
 * - `pending`: waiting to be published. Moved out by a relay's claim once
 *   `next_attempt_at` has come.
 * - `claimed`: a relay holds the lease. Moved out by that relay (to
 *   `published`, or back to `pending` after a failed publish), or by another
 *   relay's claim once the lease has expired.
 * - `published`: the queue has the message. Final.
 */
export type OutboxState = "pending" | "claimed" | "published";

export const OUTBOX_STATES: readonly OutboxState[] = [
  "pending",
  "claimed",
  "published",
];
