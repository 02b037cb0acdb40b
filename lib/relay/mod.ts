/**
 * The relay: what a service owes goes from its outbox to the transport.
 * Into the PostgreSQL queue, due rows are moved in one transaction
 * (`PgMove`, the relay's shortcut); to any other transport (JetStream), and
 * for tenants with a relay fault on, rows are claimed with a lease,
 * published, then deleted (`relayOnce` takes both paths). Rows parked by the
 * loop guard wait until the sender's next command or an operator's release
 * (`releaseParked`).
 */
export { relayOnce, type RelayOptions } from "./relay.ts";
export {
  type Released,
  type ReleaseOptions,
  releaseParked,
} from "./release.ts";
