/**
 * A delivery as both transports' consumers hold it, and what became of one
 * attempt of it: the rows of queue.deliveries and queue.attempts, which the
 * console, the timeline and the closure read whichever transport carried
 * the message.
 */
import type { Envelope } from "../outbox/envelope.ts";

export interface ClaimedDelivery {
  id: number;
  sandboxId: string;
  messageId: string;
  subscriber: string;
  type: string;
  aggregateId: string;
  /** This attempt's number, counting from 1. */
  attempt: number;
  maxAttempts: number | null;
  envelope: Envelope;
}

/** What became of one attempt. */
export interface AttemptResult {
  id: number;
  /** The delivery's next state: done, pending (retry later) or dead. */
  state: "done" | "pending" | "dead";
  attempt: number;
  status: number | null;
  error: string | null;
  /** For `pending`: how long until the next attempt. */
  delayMs: number;
  startedAt: Date;
  durationMs: number;
}
