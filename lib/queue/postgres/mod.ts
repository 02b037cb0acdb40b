/**
 * The PostgreSQL transport, whole: the queue's tables written by a publish
 * (queue.ts, store_sql.ts), the consumers' claim and finish
 * (deliveries_sql.ts), the consumer loop (consumer.ts), and all of it as
 * one object (`pgTransport`, transport.ts).
 */
export {
  consumeOnce,
  CONSUMER_BATCH_SIZE,
  type ConsumerOptions,
} from "./consumer.ts";
export {
  claimBatch,
  type ClaimOptions,
  finishDeliveries,
} from "./deliveries_sql.ts";
export { PgQueue } from "./queue.ts";
export { pgTransport, type PgTransportOptions } from "./transport.ts";
