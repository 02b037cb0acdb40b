/**
 * How a consumer judges a subscriber's answer, on either transport. At least
 * once delivery; the receivers' inboxes make a repeat harmless.
 *
 * | answer                          | what happens                         |
 * | ------------------------------- | ------------------------------------ |
 * | 2xx                             | done; a `reason` it gives is kept as |
 * |                                 | the delivery's last words            |
 * | 409, 5xx, timeout, network,     | retry after the next delay; dead     |
 * | an answer lost on its way back  | after the last one                   |
 * | 422                             | refused by the receiver: dead at once|
 * | other 4xx (400, 404, ...)       | cannot succeed as sent: dead at once |
 */

/** The answer of one POST, before it is judged. */
export type Outcome =
  | { kind: "answered"; status: number; reason: string }
  | { kind: "timeout" }
  | { kind: "network"; message: string }
  /** The subscriber answered `status`, and the answer was lost (`reason`). */
  | { kind: "lost"; status: number; reason: string };

/**
 * Judges an answer: done, retry or dead, with the error in words. Pure, so
 * the table above is tested directly.
 */
export function classify(
  outcome: Outcome,
  label: string,
  timeoutMs: number,
  attempt: number,
  maxAttempts: number,
): { state: "done" | "pending" | "dead"; error: string | null } {
  if (
    outcome.kind === "answered" && outcome.status >= 200 && outcome.status < 300
  ) {
    // Done, and nothing dropped silently: a receiver that applied nothing
    // says why ("already applied: ..."), and the delivery keeps it.
    const { status, reason } = outcome;
    return {
      state: "done",
      error: reason ? `${label} answered ${status}: ${reason}` : null,
    };
  }
  let error: string;
  let retryable: boolean;
  if (outcome.kind === "timeout") {
    error = `${label} timed out after ${timeoutMs} ms`;
    retryable = true;
  } else if (outcome.kind === "network") {
    error = `${label} could not be reached: ${outcome.message}`;
    retryable = true;
  } else if (outcome.kind === "lost") {
    error = `acknowledgement lost after ${label} answered (${outcome.reason})`;
    retryable = true;
  } else {
    const { status, reason } = outcome;
    error = `${label} answered ${status}` + (reason ? `: ${reason}` : "");
    retryable = status === 409 || status === 429 || status >= 500;
  }
  const state = retryable && attempt < maxAttempts ? "pending" : "dead";
  return { state, error };
}

/** The delay before retry number `attempt` (1-based), with up to 10 % jitter. */
export function retryDelay(delays: readonly number[], attempt: number): number {
  const base = delays[Math.min(attempt, delays.length) - 1] ?? 0;
  return Math.round(base * (1 + Math.random() * 0.1));
}
