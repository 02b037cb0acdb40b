/**
 * The stream over JetStream, as the broker holds it: which messages it
 * holds, and what each subscriber's durable consumer did with them. A
 * scenario reads it to prove that the messages went through the broker.
 */
import assert from "node:assert/strict";
import type { JetStream } from "../jetstream/mod.ts";
import { type Envelope, tenantOf } from "../../outbox/mod.ts";
import { waitFor } from "./rows.ts";

/** A message as the stream stores it. */
export interface StoredMessage {
  seq: number;
  subject: string;
  /** The broker's message id (Nats-Msg-Id). */
  msgId: string;
  /** The envelope's message id. */
  messageId: string;
  /** The envelope's tenant. */
  tenantId: string;
}

/** What a subscriber's lanes' consumers say of themselves, added up. */
export interface ConsumerState {
  /** Deliveries made, redeliveries included (its consumer sequence). */
  delivered: number;
  /** Delivered and not yet acknowledged. */
  ackPending: number;
  /** In the stream and not yet delivered. */
  pending: number;
}

/** Reads a stream and its consumers. */
export class StreamView {
  constructor(readonly stream: JetStream) {}

  get name(): string {
    return this.stream.names.stream;
  }

  /** How many messages the stream holds. */
  async count(): Promise<number> {
    return (await this.stream.jsm.streams.info(this.name)).state.messages;
  }

  /** Every message the stream holds, oldest first. */
  async stored(): Promise<StoredMessage[]> {
    const { state } = await this.stream.jsm.streams.info(this.name);
    const out: StoredMessage[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await this.stream.jsm.streams.getMessage(this.name, { seq });
      if (!m) continue;
      const envelope = m.json<Envelope>();
      out.push({
        seq: m.seq,
        subject: m.subject,
        msgId: m.header.get("Nats-Msg-Id"),
        messageId: envelope.messageId,
        tenantId: tenantOf(envelope),
      });
    }
    return out;
  }

  /** A subscriber's consumers, one per tenant (lane), added up. */
  async consumer(subscriber: string): Promise<ConsumerState> {
    const state = { delivered: 0, ackPending: 0, pending: 0 };
    for (const lane of await this.stream.lanes.list()) {
      if (lane.subscriber !== subscriber) continue;
      state.delivered += lane.delivered;
      state.ackPending += lane.ackPending;
      state.pending += lane.pending;
    }
    return state;
  }
}

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
 * envelope's tenant), under its broker id (`<message id>.<subscriber>`,
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
