/**
 * The NATS JetStream transport behind the `Queue` interface: the relay
 * publishes (lib/carriers/jetstream/queue.ts) on the lane of each subscriber
 * and tenant (lanes.ts), one consumer per subscriber takes its messages
 * from the lanes in turn (consumer.ts, loops.ts), and redrives go back to
 * the broker for one subscriber (redrive.ts). Deliveries, attempts and dead
 * letters are recorded in PostgreSQL as the PostgreSQL queue records them.
 * `jetStreamCarrier` (transport.ts) is all of it as one object.
 */
export { JetStreamQueue } from "./queue.ts";
export {
  LANE_IDLE_MS,
  natsServers,
  openJetStream,
  StreamNames,
  type StreamSettings,
} from "./stream.ts";
export type { BrokerCluster, JetStream } from "./stream.ts";
export { type LaneInfo, Lanes } from "./lanes.ts";
export {
  type BrokerLoops,
  brokerLoops,
  type BrokerLoopsOptions,
} from "./loops.ts";
export { jetStreamCarrier, type JetStreamCarrierOptions } from "./carrier.ts";
