/**
 * The broker's loops of one process: a consumer per subscriber, listening
 * to its bell; a look at every lane each poll; and the redrives'
 * republisher.
 */
import type { Subscription } from "@nats-io/transport-node";
import type { Sql } from "../../db/connect.ts";
import type { Logger } from "../../log/mod.ts";
import { Loop } from "../../wake/loop.ts";
import type { FairShare } from "../../delivery/fair_share.ts";
import type { PauseReader } from "../../ledger/pauses.ts";
import type { SendOptions } from "../../delivery/send.ts";
import { believable, JetStreamConsumer } from "./consumer.ts";
import {
  joinedRecords,
  markLost,
  openLanes,
} from "../../ledger/broker_deliveries_sql.ts";
import { bellSchema, laneKey } from "./lanes.ts";
import { republishOnce } from "./republisher.ts";
import type { JetStream } from "./stream.ts";

/** What the broker's loops need from the process that runs them. */
export interface BrokerLoopsOptions extends Omit<SendOptions, "owner"> {
  owner: string;
  sql: Sql;
  stream: JetStream;
  subscribers: SendOptions["subscribers"];
  /** The process's share between tenants (lib/delivery/fair_share.ts). */
  share: FairShare;
  ackWaitMs: number;
  pollMs: number;
  log: Logger;
  onTouched?: (tenantIds: string[]) => void;
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

/**
 * Looks at the open deliveries in PostgreSQL every this many looks at the
 * lanes (and at the first): a lane with open deliveries and no consumer is
 * made again.
 */
const OPEN_LANES_EVERY = 12;

/**
 * Builds (does not start) the broker's loops: a consumer per subscriber,
 * listening to its bell; a look at every lane each poll (what the broker
 * has pending there, for the consumers; a lane gone whose deliveries are
 * open is made again); and the republisher.
 */
export function brokerLoops(
  options: BrokerLoopsOptions,
): Promise<BrokerLoops> {
  const { stream, log } = options;
  const consumers = new Map<string, JetStreamConsumer>();
  const loops: Loop[] = [];
  const subscriptions: Subscription[] = [];
  // The consumers' loops only: the look at the lanes and the republisher
  // go at their own pace (woken with the rest, a list of every lane after
  // each send was most of the broker's work).
  const consumerLoops: Loop[] = [];
  const wakeConsumers = () => consumerLoops.forEach((l) => l.wake());
  // One for every subscriber: their bursts' records go in joined statements.
  const records = joinedRecords(options.sql, options.owner, options.ackWaitMs);
  for (const subscriber of Object.keys(options.subscribers)) {
    const consumer = new JetStreamConsumer({
      ...options,
      subscriber,
      records,
      wake: wakeConsumers,
    });
    consumers.set(subscriber, consumer);
    consumerLoops.push(
      new Loop({
        name: `broker:${subscriber}`,
        log,
        pollMs: options.pollMs,
        tick: () => consumer.tick(),
      }),
    );
    subscriptions.push(
      stream.nc.subscribe(stream.names.bell(subscriber), {
        callback: (error, msg) => {
          if (error) return;
          let body: unknown;
          try {
            body = msg.json();
          } catch {
            body = undefined;
          }
          const bell = bellSchema.safeParse(body);
          if (!bell.success) {
            // A hint only: the look at the lanes finds their messages.
            log.warn("broker_bell_refused", {
              subscriber,
              error: bell.error.issues[0]?.message,
            });
            return;
          }
          for (const [tenantId, [n, seq]] of Object.entries(bell.data)) {
            consumer.notify(tenantId, n, seq);
          }
        },
      }),
    );
  }
  let looks = 0;
  const lanes = new Loop({
    name: "broker:lanes",
    log,
    pollMs: options.pollMs,
    tick: async () => {
      // Deliveries stored before the list was asked for: the relay makes
      // sure of a lane before it stores its rows, so a lane missing from
      // the list is gone, not being made.
      const asked = new Date();
      const listed = await stream.lanes.list();
      for (const lane of listed) {
        consumers.get(lane.subscriber)?.observe(
          lane.tenantId,
          lane.pending,
          lane.ackPending,
        );
      }
      if (looks++ % OPEN_LANES_EVERY === 0) {
        const held = new Map(
          listed.map((l) => [laneKey(l), believable(l.pending) + l.ackPending]),
        );
        const open = await openLanes(options.sql, [...consumers.keys()], asked);
        const gone = open.filter((lane) => !held.has(laneKey(lane)));
        if (gone.length > 0) {
          log.warn("broker_lanes_made_again", { lanes: gone.length });
          await stream.lanes.ensure(gone, true);
          for (const lane of gone) {
            consumers.get(lane.subscriber)?.notify(lane.tenantId, 1);
          }
        }
        // The ledger is the truth: where the broker holds fewer messages
        // than a lane has open deliveries, it lost some (a stream deleted or
        // made again, its storage lost, a server down with the only copy).
        const short = open.filter((lane) =>
          (held.get(laneKey(lane)) ?? 0) < lane.open
        );
        const marked = await markLost(options.sql, short, options.ackWaitMs);
        if (marked > 0) {
          log.warn("broker_lost_republished", {
            lanes: short.length,
            deliveries: marked,
            reason:
              "the broker holds fewer messages than these lanes have open deliveries",
          });
          republisher.wake();
        }
      }
      return { more: false };
    },
  });
  const republisher = new Loop({
    name: "broker:redrive",
    log,
    pollMs: options.pollMs,
    onTouched: options.onTouched,
    tick: () =>
      republishOnce({
        sql: options.sql,
        js: stream.js,
        names: stream.names,
        lanes: stream.lanes,
        log,
      }),
  });
  loops.push(...consumerLoops, lanes, republisher);
  return Promise.resolve({
    loops,
    wakeRepublisher: () => republisher.wake(),
    settle: async () => {
      subscriptions.forEach((s) => s.unsubscribe());
      await Promise.all([...consumers.values()].map((c) => c.stop()));
    },
  });
}
