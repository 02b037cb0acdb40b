/**
 * Delivery: what a consumer does with a batch it holds, whatever carried
 * it. It sends the batch to the subscriber (send.ts, send_batch.ts,
 * exchange.ts), judges each answer (classify.ts), reaches in-process
 * receivers without a socket (dispatcher.ts), shares the process between
 * tenants (fair_share.ts), and joins a relay's hand-offs to its consumers
 * (local_queue.ts).
 */
export { classify, type Outcome, retryDelay } from "./classify.ts";
export {
  BATCH_REQUEST_MAX,
  consumerLeaseMs,
  sendAll,
  type SendOptions,
  type Subscriber,
} from "./send.ts";
export { AnswerLost, Dispatcher, type Handler } from "./dispatcher.ts";
export { FairShare, type FairShareOptions } from "./fair_share.ts";
export { LocalQueue } from "./local_queue.ts";
