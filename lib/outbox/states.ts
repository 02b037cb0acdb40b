/**
 * The states of a message a sender owes, as its outbox row and the views
 * say them. The outbox's CHECK (platform.create_outbox,
 * lib/outbox/migrations/0001_outbox.sql) allows the first two only: a
 * published message is no longer owed, so its row is gone.
 *
 * - `pending`: waiting to be published. Moved out, once `next_attempt_at`
 *   has come, by the relay: into the PostgreSQL queue, its row deleted in
 *   the transaction that stores its messages and deliveries (the relay's
 *   shortcut, lib/carriers/postgres/move.ts); over any other transport (JetStream), and
 *   for a tenant with a relay fault on, by a claim, to `claimed`.
 * - `claimed`: a relay holds the lease. Moved out by that relay (deleted
 *   once the transport has the message, or back to `pending` after a
 *   failed publish), or by another relay's claim or move once the lease has
 *   expired.
 * - `published`: the transport has the message; its durable copy is the
 *   row of queue.messages, which the views read.
 */
export type OutboxState = "pending" | "claimed" | "published";

export const OUTBOX_STATES: readonly OutboxState[] = [
  "pending",
  "claimed",
  "published",
];
