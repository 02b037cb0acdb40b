/** The relay: claim due outbox rows with a lease, publish, mark published. */
export { RELAY_FAULTS, relayOnce, type RelayOptions } from "./relay.ts";
export {
  claimOutbox,
  claimOutboxGuarded,
  failPublish,
  markPublished,
} from "./outbox_sql.ts";
