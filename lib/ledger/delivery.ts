/**
 * A delivery as both transports' consumers hold it, and what became of one
 * attempt of it: the rows of queue.deliveries and queue.attempts, which the
 * console, the timeline and the closure read whichever transport carried
 * the message.
 */
import type { Envelope } from "../outbox/envelope.ts";

export interface ClaimedDelivery {
  id: number;
  tenantId: string;
  messageId: string;
  subscriber: string;
  type: string;
  aggregateId: string;
  /** This attempt's number, counting from 1. */
  attempt: number;
  maxAttempts: number | null;
  envelope: Envelope;
  /**
   * The claim's fencing token, written as the row's `lease_owner`: the
   * finish changes the row only while it still holds this very claim's
   * lease. A token per claim, not per process, so that a process whose
   * batch outlived its lease and was claimed again cannot finish the new
   * claim with the old claim's result.
   */
  lease: string;
}

/** What became of one attempt. */
export interface AttemptResult {
  id: number;
  /** The lease of the claim that made the attempt. */
  lease: string;
  /** The delivery's next state: done, pending (retry later) or dead. */
  state: "done" | "pending" | "dead";
  attempt: number;
  status: number | null;
  error: string | null;
  /** For `pending`: how long until the next attempt. */
  delayMs: number;
  startedAt: Date;
  durationMs: number;
  /**
   * The subscriber keeps this aggregate's order for the tenant: a failure
   * is held, not retried, while an earlier delivery of the aggregate to it
   * is dead.
   */
  keepOrder?: boolean;
}

let claims = 0;

/**
 * A new fencing token for one claim of `owner` (the process): the owner,
 * so that the console and the logs still say whose it is, and the claim's
 * number in this process.
 */
export function claimLease(owner: string): string {
  return `${owner}#${++claims}`;
}
