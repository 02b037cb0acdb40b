/**
 * What the suite asks of the stream over JetStream: which messages it
 * holds, and what each subscriber's durable consumer did with them.
 */
import assert from "node:assert/strict";
import { waitFor } from "../_messaging.ts";
import type { ConsumerState, StreamView } from "../_transport.ts";

/** A delivery as the relay or a redrive publishes it. */
export interface Published {
  messageId: string;
  subscriber: string;
  /** The redrive's number, for a redriven copy. */
  redrive?: number;
}

/** One delivery of each message to each subscriber. */
export function toEach(
  messageIds: readonly string[],
  subscribers: readonly string[],
): Published[] {
  return messageIds.flatMap((messageId) =>
    subscribers.map((subscriber) => ({ messageId, subscriber }))
  );
}

/**
 * Asserts that the stream holds exactly `expected` (in any order): one
 * message per delivery, on its lane's subject (its subscriber and its
 * envelope's sandbox), under its broker id (`<message id>.<subscriber>`,
 * `.redrive.<n>` added for a redrive).
 */
export async function assertStreamHolds(
  view: StreamView,
  expected: readonly Published[],
  type = "OrderPlaced",
) {
  const stored = await view.stored();
  const tenantOf = new Map(stored.map((m) => [m.messageId, m.tenantId]));
  const line = (subject: string, msgId: string, messageId: string) =>
    `${subject} ${msgId} ${messageId}`;
  assert.deepEqual(
    stored.map((m) => line(m.subject, m.msgId, m.messageId)).sort(),
    expected.map((p) =>
      line(
        `${view.name}.to.${p.subscriber}.${tenantOf.get(p.messageId)}.${type}`,
        p.redrive
          ? `${p.messageId}.${p.subscriber}.redrive.${p.redrive}`
          : `${p.messageId}.${p.subscriber}`,
        p.messageId,
      )
    ).sort(),
  );
}

/**
 * Waits until a subscriber's consumer has nothing unacknowledged and
 * nothing undelivered (acknowledgements are sent without waiting for the
 * server), and returns its state.
 */
export async function settled(
  view: StreamView,
  subscriber: string,
): Promise<ConsumerState> {
  let state: ConsumerState | undefined;
  await waitFor(`${subscriber}'s consumer to settle`, async () => {
    state = await view.consumer(subscriber);
    return state.ackPending === 0 && state.pending === 0;
  });
  return state!;
}

/**
 * Asserts how many times JetStream delivered to each subscriber, once its
 * consumer settled: every attempt recorded in PostgreSQL was one delivery
 * by the broker (a retry is a redelivery after a nak, not a publish).
 */
export async function assertDelivered(
  view: StreamView,
  expected: Readonly<Record<string, number>>,
) {
  const actual: Record<string, number> = {};
  for (const subscriber of Object.keys(expected)) {
    actual[subscriber] = (await settled(view, subscriber)).delivered;
  }
  assert.deepEqual(actual, expected);
}
