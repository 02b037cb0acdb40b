/**
 * What a receiver's `apply` may throw, and what each means for the delivery.
 */
import { z } from "zod";

/**
 * Not yet: the instruction cannot be applied now but may later (OrderPaid
 * before the card exists). Nothing is recorded; the receiver answers 409 and
 * the delivery is retried.
 */
export class NotYet extends Error {
  override name = "NotYet";
  readonly status = 409;
}

/**
 * Refused: the instruction contradicts what the receiver already holds (a
 * second card for one order). The effect is rolled back, the refusal is
 * recorded with the message id, and the answer is 422, now and on every
 * repeat. The delivery is not retried.
 */
export class Refused extends Error {
  override name = "Refused";
  readonly status = 422;
}

/**
 * The refusal that `error` stands for, if it stands for one: a Refused
 * itself, or a payload that failed its schema (a ZodError thrown by the
 * receiver's parse). A malformed message cannot become well formed by being
 * sent again, so it is refused like a contradiction, with the field that
 * failed: `malformed: lines.0.qty: Invalid input: expected number, ...`.
 */
export function refusalOf(error: unknown): Refused | undefined {
  if (error instanceof Refused) return error;
  if (!(error instanceof z.core.$ZodError)) return undefined;
  const [first, ...more] = error.issues;
  const path = first?.path.map(String).join(".") || "(the whole payload)";
  const others = more.length > 0 ? ` (and ${more.length} more)` : "";
  return new Refused(`malformed: ${path}: ${first?.message}${others}`);
}
