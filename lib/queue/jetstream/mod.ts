/**
 * The NATS JetStream transport behind the `Queue` interface: the relay
 * publishes (lib/queue/jetstream/queue.ts), one consumer per subscriber
 * takes its messages (consumer.ts), and redrives go back to the broker for
 * one subscriber (redrive.ts). Deliveries, attempts and dead letters are
 * recorded in PostgreSQL as the PostgreSQL queue records them.
 */
import type { Sql } from "../../db/connect.ts";
import type { Logger } from "../../log/mod.ts";
import { Loop } from "../../wake/loop.ts";
import type { PauseReader } from "../pauses.ts";
import type { SendOptions } from "../send.ts";
import { JetStreamConsumer } from "./consumer.ts";
import { republishOnce } from "./redrive.ts";
import type { JetStream } from "./stream.ts";

export { JetStreamQueue } from "./queue.ts";
export { openJetStream, StreamNames, type StreamSettings } from "./stream.ts";
export type { JetStream } from "./stream.ts";

/** What the broker's loops need from the process that runs them. */
export interface BrokerLoopsOptions extends Omit<SendOptions, "owner"> {
  owner: string;
  sql: Sql;
  stream: JetStream;
  subscribers: SendOptions["subscribers"];
  ackWaitMs: number;
  /** Consumers per subscriber in this process (default 1). */
  perSubscriber?: number;
  pollMs: number;
  log: Logger;
  onTouched?: (sandboxIds: string[]) => void;
  /** Paused subscribers, whose messages wait unattempted (../pauses.ts). */
  pauses?: PauseReader;
}

/** The loops of one process: consumers, and the redrives' republisher. */
export interface BrokerLoops {
  loops: Loop[];
  /** Wakes the republisher (a redrive was committed). */
  wakeRepublisher(): void;
  /** Waits for the consumers' sends in flight (after the loops stopped). */
  settle(): Promise<void>;
}

/** Builds (does not start) the broker's loops for every subscriber. */
export async function brokerLoops(
  options: BrokerLoopsOptions,
): Promise<BrokerLoops> {
  const { stream, log } = options;
  const consumers: JetStreamConsumer[] = [];
  const loops: Loop[] = [];
  for (const subscriber of Object.keys(options.subscribers)) {
    const durable = await stream.js.consumers.get(
      stream.names.stream,
      stream.names.consumer(subscriber),
    );
    for (let i = 0; i < (options.perSubscriber ?? 1); i++) {
      const consumer = new JetStreamConsumer({
        ...options,
        subscriber,
        consumer: durable,
      });
      consumers.push(consumer);
      loops.push(
        new Loop({
          name: `broker:${subscriber}:${i}`,
          log,
          pollMs: options.pollMs,
          tick: () => consumer.tick(),
        }),
      );
    }
  }
  const republisher = new Loop({
    name: "broker:redrive",
    log,
    pollMs: options.pollMs,
    onTouched: options.onTouched,
    tick: () =>
      republishOnce({ sql: options.sql, js: stream.js, names: stream.names }),
  });
  loops.push(republisher);
  return {
    loops,
    wakeRepublisher: () => republisher.wake(),
    settle: async () => {
      await Promise.all(consumers.map((c) => c.stop()));
    },
  };
}
