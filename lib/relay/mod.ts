/**
 * The relay: what a service owes goes from its outbox to the transport. Into
 * the PostgreSQL queue, due rows are moved in one transaction (the queue's
 * `moveFrom`); to any other transport (JetStream), and for sandboxes with a
 * relay fault on, rows are claimed with a lease, published, then marked.
 */
export { RELAY_FAULTS, relayOnce, type RelayOptions } from "./relay.ts";
export {
  claimOutbox,
  claimOutboxGuarded,
  failPublish,
  GUARD_LIMIT,
  markPublished,
} from "./outbox_sql.ts";
