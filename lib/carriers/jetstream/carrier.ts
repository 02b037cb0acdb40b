/**
 * NATS JetStream as a transport (../driver.ts): the relay publishes to the
 * stream and marks its rows after the PubAcks (no move in one transaction:
 * the broker is another system), the broker's consumers deliver from the
 * lanes, a redrive goes back to the broker, and the broker's health is the
 * connection's. PostgreSQL keeps the ledger of deliveries either way.
 */
import type { Carrier } from "../carrier.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import type { Routing } from "../../ledger/queue.ts";
import { brokerLoops } from "./loops.ts";
import { JetStreamQueue } from "./queue.ts";
import type { JetStream } from "./stream.ts";

export interface JetStreamCarrierOptions {
  stream: JetStream;
  /** Where published messages and their deliveries are recorded. */
  ledger: Ledger;
  routing: Routing;
  /** The consumers' AckWait, which their lease follows. */
  ackWaitMs: number;
  /** Closes what the transport was given to own (its connections). */
  close?: () => Promise<void>;
}

export function jetStreamCarrier(
  options: JetStreamCarrierOptions,
): Carrier {
  const { stream } = options;
  return {
    name: "jetstream",
    queue: new JetStreamQueue({
      js: stream.js,
      names: stream.names,
      lanes: stream.lanes,
      routing: options.routing,
      ledger: options.ledger,
    }),
    redriveRepublishes: true,
    consumers: (context) =>
      brokerLoops({
        ...context.consumer,
        stream,
        ackWaitMs: options.ackWaitMs,
        pollMs: context.pollMs,
        onTouched: context.onTouched,
      }),
    forget: (tenantIds, subscribers) =>
      stream.lanes.forget(tenantIds, subscribers),
    up: () => stream.up(),
    cluster: () => stream.cluster(),
    close: () => options.close?.() ?? stream.close(),
  };
}
