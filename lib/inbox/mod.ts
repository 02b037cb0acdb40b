/** The idempotent receiver: apply a message once, in the receiver's transaction. */
export { NotYet, Refused } from "./errors.ts";
export {
  type Apply,
  EffectStatement,
  inStatement,
  jsonb,
  type Received,
  receiveOnce,
  type ReceiveOptions,
} from "./receive.ts";
export { alreadyApplied, appliedOf, claimSuperseded } from "./supersedes.ts";
export {
  inboxHandler,
  type InboxHandlerOptions,
  type Receiver,
} from "./handler.ts";
export { type BatchAnswer, type BatchOptions, receiveBatch } from "./batch.ts";
export {
  type ApplyMany,
  type ColumnType,
  type ManyEffect,
} from "./apply_many.ts";
export {
  type BatchReceiver,
  inboxBatchHandler,
  type InboxBatchHandlerOptions,
} from "./batch_handler.ts";
export {
  type Preview,
  type PreviewOptions,
  type PreviewOutcome,
  previewReceive,
} from "./preview.ts";
