/**
 * Outbox row states, mirrored by the CHECK in platform.create_outbox
 * (migrations/0002_outbox_inbox.sql).
 *
 * - `pending`: waiting to be published. Moved out, once `next_attempt_at`
 *   has come, by the relay: into the PostgreSQL queue, straight to
 *   `published` with its messages and deliveries in one transaction (the
 *   relay's shortcut, lib/relay/move.ts); over any other transport
 *   (JetStream), and for a sandbox with a relay fault on, by a claim, to
 *   `claimed`.
 * - `claimed`: a relay holds the lease. Moved out by that relay (to
 *   `published` once the transport has the message, or back to `pending`
 *   after a failed publish), or by another relay's claim or move once the
 *   lease has expired.
 * - `published`: the transport has the message. Final.
 */
export type OutboxState = "pending" | "claimed" | "published";

export const OUTBOX_STATES: readonly OutboxState[] = [
  "pending",
  "claimed",
  "published",
];
