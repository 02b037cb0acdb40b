/**
 * Outbox row states, mirrored by the CHECK in platform.create_outbox
 * (migrations/0002_outbox_inbox.sql).
 *
 * - `pending`: waiting to be published. Moved out, once `next_attempt_at`
 *   has come, by the relay's move into the PostgreSQL queue (straight to
 *   `published`, with its messages and deliveries, in one transaction:
 *   PgQueue.moveFrom), or by a relay's claim (the JetStream transport, and
 *   the sandboxes with a relay fault switched on).
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
