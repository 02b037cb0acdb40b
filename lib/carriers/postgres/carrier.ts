/**
 * The PostgreSQL queue as a transport (../driver.ts): messages and
 * deliveries are rows beside the outboxes, the relay moves rows into them
 * in one transaction, and consumers claim them with leases.
 */
import type { Sql } from "../../db/connect.ts";
import { PgMove } from "./move.ts";
import { Loop } from "../../wake/loop.ts";
import type { Carrier } from "../carrier.ts";
import type { Routing } from "../../ledger/queue.ts";
import { consumeOnce } from "./consumer.ts";
import { Ledger } from "../../ledger/ledger.ts";

export interface PostgresCarrierOptions {
  /** The pool the relay's moves run on (connections of their own). */
  sql: Sql;
  routing: Routing;
  /** Moves side by side, one connection each (PgMove's `slots`). */
  slots?: number;
  /** Closes what the transport was given to own (the relay's pool). */
  close?: () => Promise<void>;
}

export function postgresCarrier(options: PostgresCarrierOptions): Carrier {
  const queue = new Ledger(options.sql, options.routing);
  return {
    name: "postgres",
    queue,
    shortcut: new PgMove(queue, { slots: options.slots }),
    redriveRepublishes: false,
    consumers: (context) => {
      const loops: Loop[] = [];
      for (let i = 0; i < context.count; i++) {
        const loop: Loop = new Loop({
          name: `consumer:${i}`,
          log: context.consumer.log,
          pollMs: context.pollMs,
          onTouched: context.onTouched,
          tick: () =>
            consumeOnce({
              ...context.consumer,
              onClaimSent: () => context.local.claimSent(loop),
              handed: () => context.local.take(loop),
            }),
        });
        context.local.add(loop);
        loops.push(loop);
      }
      return Promise.resolve({ loops, settle: () => Promise.resolve() });
    },
    // Nothing but rows, which the wipe deletes.
    forget: () => Promise.resolve(),
    close: () => options.close?.() ?? Promise.resolve(),
  };
}
