/**
 * The queue the relay publishes to: PostgreSQL tables behind the `Queue`
 * interface, consumers that deliver to subscribers, and dead letter handling.
 */
export {
  classify,
  consumeOnce,
  CONSUMER_FAULTS,
  consumerLeaseMs,
  type ConsumerOptions,
  type Outcome,
  retryDelay,
  sendAll,
  type SendOptions,
  type Subscriber,
} from "./consumer.ts";
export {
  type AttemptResult,
  claimBatch,
  type ClaimedDelivery,
  type ClaimOptions,
  finishDeliveries,
} from "./deliveries_sql.ts";
export {
  type DeadLetterFilter,
  MAX_BATCH,
  redrive,
  refuse,
} from "./dead_letters.ts";
export {
  type Moved,
  type OutgoingMessage,
  PgQueue,
  type Queue,
  QUEUE_CHANNEL,
  type Routing,
} from "./publish.ts";
export { DELIVERY_STATES, type DeliveryState } from "./states.ts";
export { Dispatcher, type Handler } from "./transport.ts";
