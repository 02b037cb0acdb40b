/**
 * The relay's side of the JetStream transport: the real two-system
 * hand-off. The relay claims outbox rows with a lease, calls `publish`, and
 * marks the rows published only when it returns (lib/relay/relay.ts).
 *
 * `publish` makes sure of the lanes of the batch (a consumer per subscriber
 * and tenant, lanes.ts), sends one JetStream message per delivery on its
 * lane's subject, `Nats-Msg-Id` set to the message id and the subscriber,
 * all of a batch at once, waits for every PubAck, and rings each
 * subscriber's bell with the tenants it has new messages of. A PubAck that says duplicate counts as sent: the stream has
 * it. A publish that fails or times out fails the batch; the relay keeps the
 * rows and tries again with the same ids, which the duplicate window stores
 * once. Once the broker has them all, it stores the messages and one pending
 * delivery per subscriber in PostgreSQL (ids it has are ignored): the rows
 * the console, the timeline and the closure read, and that the consumers move
 * on. Stored after the PubAcks, not before, so that while the broker is away
 * the closure says owed, not in flight. A consumer may take a message before
 * its delivery's row is stored: it makes that row, and its message's, itself
 * (deliveries_sql.ts).
 * Each message names the service it came from in its `Outbox-Source`
 * header, for people reading the stream.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { Ledger } from "../../ledger/ledger.ts";
import type { OutgoingMessage, Queue, Routing } from "../../ledger/queue.ts";
import type { StreamNames } from "./stream.ts";
import { type Lanes, ringAll } from "./lanes.ts";
import { tenantOf } from "../../outbox/envelope.ts";

/** The header that names the service whose outbox a message came from. */
export const SOURCE_HEADER = "Outbox-Source";

export interface JetStreamQueueOptions {
  js: JetStreamClient;
  names: StreamNames;
  lanes: Lanes;
  routing: Routing;
  /** Stores the deliveries' rows (Ledger's `store`, without a NOTIFY). */
  ledger: Ledger;
  /**
   * How long to wait for a PubAck (default 10 s: a batch is hundreds of
   * publishes at once, and the relay's lease is 30 s).
   */
  timeoutMs?: number;
}

export class JetStreamQueue implements Queue {
  readonly #options: JetStreamQueueOptions;

  constructor(options: JetStreamQueueOptions) {
    this.#options = options;
  }

  /**
   * Publishes `messages`. A stream deleted while the workers run is made
   * again, and the batch sent once more, instead of failing every retry
   * until a restart (the broker answers a publish to no stream with "no
   * responders", which says nothing of why).
   */
  async publish(messages: OutgoingMessage[]): Promise<number> {
    try {
      return await this.#publish(messages);
    } catch (error) {
      // nats.js names that answer JetStreamNotEnabled (the class is not
      // exported); any other error, or a stream that is there, stands.
      if ((error as Error | null)?.name !== "JetStreamNotEnabled") throw error;
      const gone = await this.#options.lanes.makeStreamIfGone()
        .catch(() => false);
      if (!gone) throw error;
      return await this.#publish(messages);
    }
  }

  async #publish(messages: OutgoingMessage[]): Promise<number> {
    const { js, names, lanes, routing, ledger } = this.#options;
    if (messages.length === 0) return 0;
    const timeout = this.#options.timeoutMs ?? 10_000;
    const lanesOf = messages.flatMap(({ envelope }) =>
      (routing[envelope.type] ?? []).map((subscriber) => ({
        subscriber,
        tenantId: tenantOf(envelope),
      }))
    );
    await lanes.ensure(lanesOf);
    // What each subscriber's bell says: the lanes' messages and their last
    // stream sequence.
    const published: { subscriber: string; tenantId: string; seq: number }[] =
      [];
    const sent = await Promise.all(
      messages.map(async ({ source, envelope }) => {
        const data = JSON.stringify(envelope);
        const h = headers();
        h.set(SOURCE_HEADER, source);
        // W3C trace context, as a header, for whoever reads the stream.
        if (envelope.traceparent) h.set("traceparent", envelope.traceparent);
        const acks = await Promise.all(
          (routing[envelope.type] ?? []).map(async (subscriber) => {
            const ack = await js.publish(
              names.subject(subscriber, tenantOf(envelope), envelope.type),
              data,
              {
                msgID: names.messageId(envelope.messageId, subscriber),
                headers: h,
                timeout,
              },
            );
            published.push({
              subscriber,
              tenantId: tenantOf(envelope),
              seq: ack.seq,
            });
            return ack;
          }),
        );
        return acks.some((ack) => !ack.duplicate);
      }),
    );
    ringAll(lanes, published);
    // In message id order, as the consumers store theirs (deliveries_sql.ts):
    // a consumer quicker than this store inserts some of the same rows, and
    // two inserts that take the same keys in different orders deadlocked
    // (the stream's order is not the outbox's: the batch is published at
    // once). The rows' ids do not order anything over JetStream.
    await ledger.store(
      [...messages].sort((a, b) =>
        a.envelope.messageId < b.envelope.messageId ? -1 : 1
      ),
      { notify: false },
    );
    return sent.filter(Boolean).length;
  }
}
