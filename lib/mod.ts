/**
 * The messaging core's one entry point: a user of lib/ imports this
 * module, passes `createMessaging` what differs from the defaults, and gets
 * one object that runs and operates the process's messaging. Beside it:
 * what a sender calls in its own transaction (`append`), what a receiver
 * wraps its effect in (`inboxHandler`, `inboxBatchHandler`), and the
 * schema (`migrateMessaging`). The rooms behind it (ledger/, carriers/,
 * delivery/, relay/, outbox/, inbox/) keep their own mod.ts for what goes
 * deeper.
 *
 * @example
 * ```ts
 * import { append, createMessaging, newEnvelope } from "./lib/mod.ts";
 *
 * const messaging = createMessaging({
 *   ledger: { sql, url },
 *   routing: { SignupCompleted: ["mailer"] },
 *   senders: ["accounts"],
 *   subscribers: { mailer: { url: "http://mailer.internal/inbox" } },
 * });
 * await messaging.start();
 * ```
 */
export {
  builtCarrier,
  type CarrierPlan,
  createMessaging,
  type Messaging,
  type MessagingHealth,
  type MessagingOptions,
  TUNING,
  type Tuning,
} from "./messaging.ts";
export type {
  OperatorDeadLetters,
  PreviewReceiver,
  RedrivePreview,
} from "./redrive_preview.ts";
export {
  append,
  type Envelope,
  newEnvelope,
  outboxWrites,
  wakeAfterAppend,
} from "./outbox/mod.ts";
export {
  type Apply,
  inboxBatchHandler,
  inboxHandler,
  NotYet,
  type Receiver,
  Refused,
} from "./inbox/mod.ts";
export { Dispatcher, type Subscriber } from "./delivery/mod.ts";
export { newOwner } from "./workers/mod.ts";
export type { DeadLetterFilter, DeadLetters, Routing } from "./ledger/mod.ts";
export type { Carrier } from "./carriers/carrier.ts";
export { migrateMessaging } from "./schema.ts";
export { asService, type ServiceTx } from "./db/service.ts";
export { connect, type Sql } from "./db/connect.ts";
export { inPlatform, schemaNames, useSchemaNames } from "./db/names.ts";
export { createLogger, type Logger } from "./log/mod.ts";
