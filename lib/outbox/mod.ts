/** The transactional outbox: append messages in the sender's own transaction. */
export {
  append,
  type AppendOptions,
  OUTBOX_CHANNEL,
  outboxWrites,
  wakeAfterAppend,
  wakeInStatement,
} from "./append.ts";
export {
  type Envelope,
  envelopeSchema,
  newEnvelope,
  tenantOf,
  uuidv7,
} from "./envelope.ts";
export { OUTBOX_STATES, type OutboxState } from "./states.ts";
export {
  coalescingWaker,
  type LocalRelays,
  type OutboxWaker,
  setOutboxWaker,
} from "./wake.ts";
export {
  claimOutbox,
  failPublish,
  GUARD_LIMIT,
  markPublished,
  type ParkedTarget,
  releaseParkedIn,
} from "./outbox_sql.ts";
