/**
 * The ledger: PostgreSQL's record of what each sender published and what
 * each subscriber was delivered and applied (the `queue` schema), kept
 * whatever carries the messages. Every statement that writes it is here:
 * storing a publish (store_sql.ts, ledger.ts), claiming and finishing
 * deliveries (deliveries_sql.ts; broker_deliveries_sql.ts where a broker
 * hands them out), dead letters and their redrive (dead_letters.ts,
 * redrive_order.ts), the broker's redrive marks
 * (republish_marks_sql.ts), the closure audit, retention and pauses.
 */
export { QUEUE_CHANNEL } from "./channel.ts";
export type { AttemptResult, ClaimedDelivery } from "./delivery.ts";
export {
  beyond,
  type DeadLetterFilter,
  type DeadLetters,
  deadLetters,
  type DeadMessage,
  deadMessages,
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
export { DELIVERY_STATES, type DeliveryState } from "./states.ts";
export {
  type DeadAgain,
  type EarlierDeadLetter,
  earlierDeadLetters,
  inSendingOrder,
  type RedriveOutcome,
  redriveOutcome,
} from "./redrive_order.ts";
export {
  claimBatch,
  type ClaimOptions,
  finishDeliveries,
  renewLease,
} from "./deliveries_sql.ts";
export { Ledger } from "./ledger.ts";
export {
  type Closed,
  type HeldLanes,
  type LaneList,
  NOTHING_CLOSED,
  NOTHING_HELD,
} from "./lanes.ts";
export { LedgerRouter } from "./router.ts";
export { counted, uncounted } from "./audit.ts";
export { deleteSubscriberRows } from "./retention.ts";
export {
  FORGOTTEN_AFTER_BEATS,
  mergeWorkers,
  readWorkers,
  SILENT_AFTER_BEATS,
  type WorkerRow,
} from "./workers_sql.ts";
