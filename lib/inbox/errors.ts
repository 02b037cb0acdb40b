/**
 * What a receiver's `apply` may throw, and what each means for the delivery.
 */

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
