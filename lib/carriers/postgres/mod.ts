/**
 * The PostgreSQL carrier: the queue shares the outboxes' database, so the
 * relay moves owed rows into the ledger in one transaction (move.ts,
 * move_sql.ts), and consumers claim deliveries from the ledger with
 * `FOR UPDATE SKIP LOCKED` (consumer.ts). `postgresCarrier` (carrier.ts) is
 * all of it as one object.
 */
export {
  consumeOnce,
  CONSUMER_BATCH_SIZE,
  type ConsumerOptions,
} from "./consumer.ts";
export { MOVE_SLOT_LOCK, PgMove } from "./move.ts";
export { postgresCarrier, type PostgresCarrierOptions } from "./carrier.ts";
