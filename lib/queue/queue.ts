/**
 * What any transport offers the relay: a publish of a batch of envelopes,
 * each fanned out to the subscribers its type is routed to. A message id the
 * transport has already is not stored again, so that the relay may publish
 * first and mark its outbox rows second.
 */
import type { Envelope } from "../outbox/envelope.ts";

/** Event type -> the subscribers that get it. */
export type Routing = Readonly<Record<string, readonly string[]>>;

export interface OutgoingMessage {
  /** The service whose outbox the message came from. */
  source: string;
  envelope: Envelope;
}

/** A transport: PostgreSQL (lib/queue/postgres) or JetStream (jetstream/). */
export interface Queue {
  /** Publishes a batch; returns how many messages were new to the queue. */
  publish(messages: OutgoingMessage[]): Promise<number>;
}
