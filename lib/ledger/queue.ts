/**
 * What any transport offers the relay: a publish of a batch of envelopes,
 * each fanned out to the subscribers its type is routed to. A message id the
 * transport has already is not stored again, so that the relay may publish
 * first and mark its outbox rows second.
 */
import type { Fragment, TxSql } from "../db/connect.ts";
import type { Envelope } from "../outbox/envelope.ts";

/** Event type -> the subscribers that get it. */
export type Routing = Readonly<Record<string, readonly string[]>>;

export interface OutgoingMessage {
  /** The service whose outbox the message came from. */
  source: string;
  envelope: Envelope;
}

/** The tenants a queue diverts from the relay's shortcut, two ways. */
export interface Diverted {
  /** As they are now: the tenants whose rows the long way claims. */
  list(): Promise<string[]>;
  /**
   * As a subquery of tenant ids that the shortcut runs in its own
   * statement: a switch turned on before a row was written is then always
   * seen, where a list read before the statement can be a moment old.
   */
  query(sql: TxSql): Fragment;
}

/**
 * Where the relay publishes: the ledger itself when the queue is
 * PostgreSQL (ledger.ts), or a broker that records in it
 * (lib/carriers/jetstream/queue.ts).
 */
export interface Queue {
  /**
   * Publishes a batch; returns how many messages were new to the queue.
   * Throws when nothing was published, or a PartialPublish.
   */
  publish(messages: OutgoingMessage[]): Promise<number>;
  /**
   * The tenants whose messages must come through `publish`: a decorator
   * acts on them (lib/faults), so the relay's shortcut leaves their rows.
   */
  diverted?: Diverted;
}

/**
 * Thrown by a publish that did not go through whole. The messages named in
 * `failed` were not published, for the reason in the error's message: the
 * relay records it and retries them. Those in `unmarked` were published,
 * but the relay leaves them as a crash between its publish and its mark
 * would: claimed, until the lease runs out and another claim publishes them
 * again. Every other message of the batch was published.
 */
export class PartialPublish extends Error {
  override name = "PartialPublish";

  constructor(
    message: string,
    /** Message ids not published. */
    readonly failed: ReadonlySet<string>,
    /** Message ids published, not to be marked. */
    readonly unmarked: ReadonlySet<string>,
  ) {
    super(message);
  }
}
