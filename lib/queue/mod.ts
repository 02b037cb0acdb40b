/**
 * The transport the relay publishes to, behind the `Queue` interface:
 * PostgreSQL tables (lib/queue/postgres, the default) or NATS JetStream
 * (lib/queue/jetstream). What both share lives here: the deliveries'
 * states, how a consumer sends and judges an answer, the fair share between
 * tenants, dead letters (redrive and refuse) and the closure audit.
 */
export { classify, type Outcome, retryDelay } from "./classify.ts";
export { QUEUE_CHANNEL } from "./channel.ts";
export type { AttemptResult, ClaimedDelivery } from "./delivery.ts";
export {
  beyond,
  type DeadLetterFilter,
  type FailureGroup,
  failureGroups,
  matchDeadLetters,
  type MatchedDeadLetters,
  MAX_BATCH,
  redrive,
  redriveIn,
  type RedriveOptions,
  refuse,
  refuseIn,
  type Superseded,
  supersedeIn,
  TooManySupersessions,
} from "./dead_letters.ts";
export {
  type DeadAgain,
  type EarlierDeadLetter,
  earlierDeadLetters,
  inSendingOrder,
  type RedriveOutcome,
  redriveOutcome,
} from "./redrive_order.ts";
export {
  type PauseChange,
  type PausedLanes,
  pausedSubscribers,
  type PauseReader,
  pgPauses,
  RESUME_HINT,
  setPaused,
} from "./pauses.ts";
export {
  type Diverted,
  type OutgoingMessage,
  PartialPublish,
  type Queue,
  type Routing,
} from "./queue.ts";
export {
  consumerLeaseMs,
  sendAll,
  type SendOptions,
  type Subscriber,
} from "./send.ts";
export { DELIVERY_STATES, type DeliveryState } from "./states.ts";
export { AnswerLost, Dispatcher, type Handler } from "./transport.ts";
export {
  claimBatch,
  type ClaimOptions,
  consumeOnce,
  type ConsumerOptions,
  finishDeliveries,
  PgQueue,
  pgTransport,
} from "./postgres/mod.ts";
export type {
  ConsumeContext,
  Consumers,
  LocalConsumers,
  Transport,
} from "./driver.ts";
