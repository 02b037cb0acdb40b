/**
 * Lanes: one durable pull consumer per subscriber and tenant, so that the
 * consumers can take each tenant's messages apart, round-robin and up to
 * the fair share (consumer.ts). NATS 2.9 gives a consumer one filter
 * subject and no priority groups, so a lane is a consumer of its own,
 * filtered to `<stream>.to.<subscriber>.<tenant>.*`.
 *
 * A lane's consumer is made on demand: by the relay and the republisher
 * before they publish to it (`ensure`), by a consumer whose fetch found it
 * gone, and by the workers' look at the open deliveries in PostgreSQL. It
 * starts at the stream's first message of its subjects (a lane made again
 * gives its old messages once more: the settled ones are only
 * acknowledged, deliveries_sql.ts), and the server deletes it after
 * `idleMs` without a fetch (`inactive_threshold`), so that the consumers of
 * tenants long done go away.
 *
 * After a publish the relay rings the subscriber's bell (a core NATS
 * message, `<stream>.bell.<subscriber>`, with a count per tenant and the
 * last stream sequence among them): the consumers fetch from those lanes at
 * once, unless they have had that sequence already. A bell may be lost; the workers
 * also list the lanes every poll, with what each has pending.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { z } from "zod";
import type { StreamNames } from "./stream.ts";

/** Nanoseconds in a millisecond: JetStream's durations are nanoseconds. */
const NS = 1_000_000;

/** A subscriber in one tenant. */
export interface LaneKey {
  subscriber: string;
  tenantId: string;
}

/** A lane as its consumer says. */
export interface LaneInfo extends LaneKey {
  /** In the stream and not yet delivered. */
  pending: number;
  /** Delivered and not yet acknowledged (naks waiting for their delay too). */
  ackPending: number;
  /** Deliveries made, redeliveries included. */
  delivered: number;
}

/**
 * What a bell says: per tenant, how many new messages, and the stream
 * sequence of the last of them.
 */
export const bellSchema = z.record(
  z.uuid(),
  z.tuple([z.number().int().positive(), z.number().int().positive()]),
);

export type Bell = z.infer<typeof bellSchema>;

export interface LaneSettings {
  /** The lanes' AckWait. */
  ackWaitMs: number;
  /** How long a lane's consumer may go unfetched before the server drops it. */
  idleMs: number;
  /**
   * Makes the stream again, as the workers made it when they started: for
   * a stream deleted while they run (see {@link Lanes.makeStreamIfGone}).
   */
  makeStream?: () => Promise<void>;
}

/** True for the broker's "no such stream". */
function isStreamGone(error: unknown): boolean {
  return error instanceof JetStreamApiError &&
    error.code === JetStreamApiCodes.StreamNotFound;
}

export class Lanes {
  readonly #nc: NatsConnection;
  readonly #jsm: JetStreamManager;
  readonly #names: StreamNames;
  readonly #settings: LaneSettings;
  /** When this process last made sure of a lane, by lane key. */
  #ensured = new Map<string, number>();
  /** The stream being made again, while it is. */
  #making: Promise<void> | undefined;
  #generation = 0;

  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    names: StreamNames,
    settings: LaneSettings,
  ) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#names = names;
    this.#settings = settings;
  }

  /**
   * Makes sure these lanes' consumers exist (a create on NATS 2.9 leaves an
   * existing consumer as it is, its settings updated). A lane this process
   * made sure of within a tenth of `idleMs` is taken as there, unless
   * `force`: a consumer that found its lane gone asks again.
   */
  async ensure(lanes: readonly LaneKey[], force = false): Promise<void> {
    const now = Date.now();
    const fresh = this.#settings.idleMs / 10;
    const todo = new Map<string, LaneKey>();
    for (const lane of lanes) {
      const key = laneKey(lane);
      const at = this.#ensured.get(key);
      if (!force && at !== undefined && now - at < fresh) continue;
      todo.set(key, lane);
    }
    await Promise.all([...todo].map(async ([key, lane]) => {
      const add = () => this.#addLane(lane);
      await add().catch(async (error) => {
        if (!isStreamGone(error) || !await this.makeStreamIfGone()) throw error;
        await add();
      });
      this.#ensured.set(key, Date.now());
    }));
    if (this.#ensured.size > 10_000) {
      for (const [key, at] of this.#ensured) {
        if (now - at >= fresh) this.#ensured.delete(key);
      }
    }
  }

  /**
   * How many times this process has made the stream again. Stream sequences
   * start over in a stream made again, so what a consumer knows of a lane's
   * sequences holds only within one generation.
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * When the stream is gone (deleted while the workers run), makes it again
   * and forgets which lanes were made sure of: their consumers went with
   * it. True when it was gone. The messages it held are not in the new one;
   * their deliveries stay open in PostgreSQL for an operator to see.
   */
  async makeStreamIfGone(): Promise<boolean> {
    const make = this.#settings.makeStream;
    if (!make) return false;
    if (!this.#making) {
      try {
        await this.#jsm.streams.info(this.#names.stream);
        return false;
      } catch (error) {
        if (!isStreamGone(error)) throw error;
      }
      if (!this.#making) {
        this.#making = make().finally(() => this.#making = undefined);
        this.#generation++;
      }
      this.#ensured.clear();
    }
    await this.#making;
    return true;
  }

  /**
   * Forgets tenants for good (their wipe): their messages are purged from
   * the stream, for every subscriber, and their lanes' consumers deleted,
   * so that no lane made again gives them once more. A stream that is gone
   * holds nothing of them.
   */
  async forget(
    tenantIds: readonly string[],
    subscribers: readonly string[],
  ): Promise<void> {
    const stream = this.#names.stream;
    for (const tenantId of tenantIds) {
      try {
        await this.#jsm.streams.purge(stream, {
          filter: this.#names.tenantFilter(tenantId),
        });
      } catch (error) {
        if (isStreamGone(error)) return;
        throw error;
      }
      await Promise.all(subscribers.map(async (subscriber) => {
        this.#ensured.delete(laneKey({ subscriber, tenantId }));
        try {
          await this.#jsm.consumers.delete(
            stream,
            this.#names.consumer(subscriber, tenantId),
          );
        } catch (error) {
          const gone = error instanceof JetStreamApiError &&
            (error.code === JetStreamApiCodes.ConsumerNotFound ||
              error.code === JetStreamApiCodes.StreamNotFound);
          if (!gone) throw error;
        }
      }));
    }
  }

  #addLane(lane: LaneKey) {
    return this.#jsm.consumers.add(this.#names.stream, {
      durable_name: this.#names.consumer(lane.subscriber, lane.tenantId),
      filter_subject: this.#names.laneFilter(lane.subscriber, lane.tenantId),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: this.#settings.ackWaitMs * NS,
      // Retries are the consumers' to count (attempts in PostgreSQL, a nak
      // with the retry's delay); JetStream redelivers without a limit.
      max_deliver: -1,
      inactive_threshold: this.#settings.idleMs * NS,
    });
  }

  /** Tells the subscriber's consumers of new messages in these tenants. */
  ring(subscriber: string, bell: Bell) {
    if (Object.keys(bell).length === 0) return;
    this.#nc.publish(this.#names.bell(subscriber), JSON.stringify(bell));
  }

  /** Every lane of the stream, with what its consumer has pending. */
  async list(): Promise<LaneInfo[]> {
    try {
      return await this.#list();
    } catch (error) {
      // The workers' look at the lanes makes a stream deleted under them
      // again, for what no publish would (a redrive, a worker that only
      // consumes): it has no lanes.
      if (!isStreamGone(error) || !await this.makeStreamIfGone()) throw error;
      return [];
    }
  }

  async #list(): Promise<LaneInfo[]> {
    const out: LaneInfo[] = [];
    for await (const ci of this.#jsm.consumers.list(this.#names.stream)) {
      const lane = this.#names.laneOf(ci.config.filter_subject ?? "");
      if (!lane) continue;
      out.push({
        ...lane,
        pending: ci.num_pending,
        ackPending: ci.num_ack_pending,
        delivered: ci.delivered.consumer_seq,
      });
    }
    return out;
  }
}

/** One string per lane, for maps. */
export function laneKey(lane: LaneKey): string {
  return `${lane.subscriber}\u0000${lane.tenantId}`;
}

/** Rings each subscriber's bell for messages published on its lanes. */
export function ringAll(
  lanes: Lanes,
  published: readonly (LaneKey & { seq: number })[],
) {
  const bells = new Map<string, Bell>();
  for (const { subscriber, tenantId, seq } of published) {
    let bell = bells.get(subscriber);
    if (!bell) bells.set(subscriber, bell = {});
    const [n, last] = bell[tenantId] ?? [0, 0];
    bell[tenantId] = [n + 1, Math.max(last, seq)];
  }
  for (const [subscriber, bell] of bells) lanes.ring(subscriber, bell);
}
