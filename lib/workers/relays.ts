/**
 * The relay loops of one process, one per sending service, and what ties
 * them to this process's consumers: a publish or a move that committed wakes
 * one consumer at once (no wait for the relay's mark or for the NOTIFY to
 * come back), and a move made while a consumer is idle hands its
 * deliveries over, already leased (local_queue.ts).
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import type { FairShare } from "../delivery/fair_share.ts";
import type { PauseReader } from "../ledger/pauses.ts";
import type { Queue } from "../ledger/queue.ts";
import { claimLease } from "../ledger/delivery.ts";
import type { Shortcut } from "../carriers/carrier.ts";
import { relayOnce } from "../relay/relay.ts";
import { Loop } from "../wake/loop.ts";
import type { LocalQueue } from "../delivery/local_queue.ts";

export interface RelayLoopsOptions {
  sql: Sql;
  log: Logger;
  /** This process's lease owner. */
  owner: string;
  senders: readonly string[];
  /** The transport, decorated already (lib/faults). */
  queue: Queue;
  shortcut?: Shortcut;
  pollMs: number;
  retryMs: number;
  leaseMs?: number;
  /** This process's consumers, which the relays wake and hand work to. */
  local: LocalQueue;
  /** The consumers' lease, written on deliveries handed over. */
  handoffLeaseMs: number;
  /** True once the process stops: nothing more is handed over. */
  stopping: () => boolean;
  /** Paused subscribers: their deliveries are never handed over. */
  pauses?: PauseReader;
  /**
   * The consumers' share (lib/delivery/fair_share.ts): nothing is handed over
   * to a lane or tenant it holds in full, and what is handed over is held.
   * Without it (no consumers here), nothing is handed over.
   */
  share?: FairShare;
  onTouched?: (tenantIds: string[]) => void;
  observeLag?: (seconds: number, service: string) => void;
}

/** Builds (does not start) one relay loop per sender, by service. */
export function relayLoops(options: RelayLoopsOptions): Map<string, Loop> {
  const { local, owner, log } = options;
  const inner = options.queue;
  const queue: Queue = {
    diverted: inner.diverted,
    publish: async (messages) => {
      const published = await inner.publish(messages);
      if (published > 0) local.hint();
      return published;
    },
  };
  const direct = options.shortcut;
  const shortcut: Shortcut | undefined = direct && {
    move: async (service, limit, moveOptions) => {
      const here = local.consumers.length > 0;
      const { share } = options;
      const handoff = share && here && !options.stopping() && local.anyIdle
        ? {
          // A move that hands off is a claim: a lease of its own.
          owner: claimLease(owner),
          leaseMs: options.handoffLeaseMs,
          // At most what a consumer takes of handoffs at once, and of each
          // tenant and lane what the share has room for: a move of several
          // messages hands off what fits, where handing off all or none
          // sent every move of a busy minute the long way, through a claim
          // (bench/HISTORY.md).
          max: local.batchSize,
          room: {
            perTenant: share.perTenant,
            perLane: share.perLane,
            held: share.held(),
          },
          // The pairs as last read (a move must not wait on the consumers'
          // pool), and what the share holds in full.
          closed: share.closed(options.pauses?.known()),
        }
        : undefined;
      // The move's NOTIFY (for other processes' consumers) names this
      // process when its consumers are woken here, so that its own listener
      // skips it: heard, it ran a second claim that found nothing.
      const moved = await direct.move(service, limit, {
        ...moveOptions,
        wokenBy: here ? owner : undefined,
        handoff,
      });
      if (moved.handed.length > 0) {
        // Held from now, so that the next move sees it.
        share?.hold(moved.handed);
        local.hand(moved.handed);
        // The rest waits for room, which a consumer may have made while
        // this move ran: after its release, before these rows committed.
        if (moved.leftPending) local.hint();
      } else if (moved.published > 0) local.hint();
      return moved;
    },
  };
  const relays = new Map<string, Loop>();
  for (const service of options.senders) {
    relays.set(
      service,
      new Loop({
        name: `relay:${service}`,
        log,
        pollMs: options.pollMs,
        onTouched: options.onTouched,
        tick: () =>
          relayOnce({
            sql: options.sql,
            service,
            queue,
            shortcut,
            owner,
            log,
            retryMs: options.retryMs,
            leaseMs: options.leaseMs,
            observeLag: options.observeLag,
          }),
      }),
    );
  }
  return relays;
}
