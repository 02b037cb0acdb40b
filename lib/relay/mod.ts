/**
 * The relay: what a service owes goes from its outbox to the transport.
 * Into the PostgreSQL queue, due rows are moved in one transaction
 * (`PgMove`, the relay's shortcut); to any other transport (JetStream), and
 * for sandboxes with a relay fault on, rows are claimed with a lease,
 * published, then marked (`relayOnce` takes both paths).
 */
export { relayOnce, type RelayOptions } from "./relay.ts";
export {
  type Handoff,
  MOVE_SLOT_LOCK,
  type Moved,
  type MoveOptions,
  PgMove,
  type Shortcut,
} from "./move.ts";
export {
  claimOutbox,
  claimOutboxGuarded,
  failPublish,
  GUARD_LIMIT,
  markPublished,
} from "./outbox_sql.ts";
