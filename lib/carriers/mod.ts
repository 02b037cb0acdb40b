/**
 * Carriers: what takes a published message from the relay to a consumer.
 * carrier.ts is the interface, as River's driver or Oban's engine: all
 * that differs between carrying messages in PostgreSQL (postgres/) and in
 * NATS JetStream (jetstream/). Both record what they carry in the ledger
 * (lib/ledger).
 */
export type {
  Carrier,
  ConsumeContext,
  Consumers,
  LocalConsumers,
  Moved,
  MoveOptions,
  Shortcut,
} from "./carrier.ts";
export {
  consumeOnce,
  CONSUMER_BATCH_SIZE,
  type ConsumerOptions,
  MOVE_SLOT_LOCK,
  PgMove,
  postgresCarrier,
  type PostgresCarrierOptions,
} from "./postgres/mod.ts";
