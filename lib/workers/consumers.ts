/**
 * The consumer loops of one process, as its transport builds them
 * (lib/carriers/carrier.ts: the PostgreSQL queue's claims, reached through this
 * process's hand-off buffer, local_queue.ts; or the broker's consumers);
 * the process's fair share between tenants (lib/delivery/fair_share.ts);
 * and the closure audit beside them.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import { auditOnce, type AuditOptions } from "../ledger/audit.ts";
import { FairShare, type FairShareOptions } from "../delivery/fair_share.ts";
import type { PauseReader } from "../ledger/pauses.ts";
import type { Carrier } from "../carriers/carrier.ts";
import { consumeOnce, type ConsumerOptions } from "../carriers/postgres/mod.ts";
import { BATCH_REQUEST_MAX, type SendOptions } from "../delivery/send.ts";
import { Loop } from "../wake/loop.ts";
import type { LocalQueue } from "../delivery/local_queue.ts";

export interface ConsumerLoopsOptions
  extends Omit<SendOptions, "observeDelivered"> {
  sql: Sql;
  log: Logger;
  pollMs: number;
  /** Consumer loops (default 4), each up to a batch (PostgreSQL queue). */
  consumers?: number;
  leaseMs?: number;
  fairShare?: Partial<FairShareOptions>;
  /** Builds the consumers themselves. */
  transport: Carrier;
  audit?: Omit<AuditOptions, "sql">;
  /** How long after a batch the audit looks (default 250 ms). */
  auditDelayMs?: number;
  /** The PostgreSQL queue's consumers, woken and handed work here. */
  local: LocalQueue;
  /** Paused subscribers, whose deliveries wait (lib/ledger/pauses.ts). */
  pauses?: PauseReader;
  onTouched?: (tenantIds: string[]) => void;
  observeDelivered?: (seconds: number, subscriber: string) => void;
}

export interface ConsumerLoops {
  /** Every loop: the transport's consumers, and the audit. */
  loops: Loop[];
  /** The process's share between tenants, which its relays' handoffs keep. */
  share: FairShare;
  /** Wakes the transport's republisher of redrives, where it has one. */
  wakeRepublisher?: () => void;
  /**
   * After the loops stopped: waits for what they left running, and sends
   * the deliveries handed over after their last look.
   */
  settle(): Promise<void>;
}

/** Builds (does not start) the consumer loops of one process. */
export async function consumerLoops(
  options: ConsumerLoopsOptions,
): Promise<ConsumerLoops> {
  const { local, log } = options;
  const auditor = options.audit && auditLoop(options, options.audit);
  const touched = (ids: string[]) => {
    auditor?.wakeSoon();
    options.onTouched?.(ids);
  };
  // The share counts requests, not claims: a claim takes up to 100, but a
  // tenant may hold half of the consumers' requests' worth (20 with the
  // default 4 consumers), and half of that for one subscriber, and as many
  // may be left running as stragglers. Counted in claims, one tenant's
  // slow receiver held every consumer and another tenant's message
  // waited 4 s (tests/fairness_test.ts). A batch waits 250 ms for its
  // slowest deliveries: longer than a delivery takes on a loaded machine,
  // far shorter than a slow receiver's timeout.
  const slots = (options.consumers ?? 4) * BATCH_REQUEST_MAX;
  const perTenant = Math.max(BATCH_REQUEST_MAX, Math.floor(slots / 2));
  const share = new FairShare({
    perTenant,
    perLane: Math.ceil(perTenant / 2),
    maxDetached: slots,
    stragglerMs: 250,
    ...options.fairShare,
  });
  const consumerOptions: ConsumerOptions = {
    sql: options.sql,
    owner: options.owner,
    log,
    dispatcher: options.dispatcher,
    subscribers: options.subscribers,
    retryDelaysMs: options.retryDelaysMs,
    timeoutMs: options.timeoutMs,
    leaseMs: options.leaseMs,
    observeDelivered: options.observeDelivered,
    // A full batch: there is probably more, let an idle one help.
    onFullBatch: () => local.hint(),
    share,
    pauses: options.pauses,
    // Stragglers recorded: their tenant may have rows it was held back
    // from, and live views show the change.
    onLateFinished: (ids) => {
      touched(ids);
      local.hint();
    },
  };
  const transport = await options.transport.consumers({
    consumer: consumerOptions,
    count: options.consumers ?? 4,
    pollMs: options.pollMs,
    onTouched: touched,
    local,
  });
  return {
    loops: [...transport.loops, ...(auditor ? [auditor.loop] : [])],
    share,
    wakeRepublisher: transport.wakeRepublisher,
    settle: async () => {
      auditor?.cancel();
      await transport.settle();
      // Stragglers end by their timeout at the latest, and in-process
      // receivers a consumer gave up on may still be answering.
      await share.settle();
      // Handed off after the consumers' last look: theirs to send, not to
      // leave leased until the lease runs out.
      while (local.handing) {
        await consumeOnce({
          ...consumerOptions,
          batchesPerTick: 1,
          handed: () => local.take(),
        }).catch((error) => log.error("handoff_unsent", { error }));
      }
    },
  };
}

/**
 * The closure audit's loop, woken `auditDelayMs` after a batch: it then
 * takes everything done meanwhile in one batch, away from the moments a
 * delivery waits for the cores (bench/HISTORY.md). The console reads the
 * few done deliveries not yet audited directly, so the audit may lag;
 * woken after every batch, it ran two transactions and seven statements in
 * the middle of the next message's path.
 */
function auditLoop(
  options: ConsumerLoopsOptions,
  audit: Omit<AuditOptions, "sql">,
): { loop: Loop; wakeSoon(): void; cancel(): void } {
  const loop = new Loop({
    name: "audit",
    log: options.log,
    pollMs: options.pollMs,
    onTouched: options.onTouched,
    tick: () => auditOnce({ ...audit, sql: options.sql }),
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  return {
    loop,
    wakeSoon: () => {
      if (timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        loop.wake();
      }, options.auditDelayMs ?? 250);
    },
    cancel: () => clearTimeout(timer),
  };
}
