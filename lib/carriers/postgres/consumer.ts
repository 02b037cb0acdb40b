/**
 * The PostgreSQL queue's consumer: claim due deliveries, send them
 * (lib/delivery/send.ts), and record the batch, fenced by the claim's lease.
 * How an answer is judged is the same on both transports
 * (lib/delivery/classify.ts).
 */
import type { Sql } from "../../db/connect.ts";
import type { TickResult } from "../../wake/loop.ts";
import type { AttemptResult, ClaimedDelivery } from "../../ledger/delivery.ts";
import type { FairShare } from "../../delivery/fair_share.ts";
import type { PauseReader } from "../../ledger/pauses.ts";
import {
  consumerLeaseMs,
  recorded,
  send,
  type SendOptions,
} from "../../delivery/send.ts";
import {
  claimBatch,
  type ClaimOptions,
  finishAndClaim,
  finishDeliveries,
} from "../../ledger/deliveries_sql.ts";

export interface ConsumerOptions extends SendOptions {
  sql: Sql;
  /** Deliveries per claim (default CONSUMER_BATCH_SIZE). */
  batchSize?: number;
  /** Must outlast the timeout; default 4 x timeout, at least 10 s. */
  leaseMs?: number;
  /**
   * Called just before the claim goes to the server: a wake-up hint heard
   * before this moment is answered by this claim (lib/workers/mod.ts).
   */
  onClaimSent?: () => void;
  /** Called when a claim came back full: there is probably more to do. */
  onFullBatch?: () => void;
  /**
   * Full batches one tick may take in a row, each claimed in the
   * transaction that records the one before (default 5).
   */
  batchesPerTick?: number;
  /** The process's share between tenants (lib/delivery/fair_share.ts). */
  share: FairShare;
  /** The paused subscribers, whose deliveries no claim takes (../pauses.ts). */
  pauses?: PauseReader;
  /**
   * Called once deliveries left running on their own (stragglers) were
   * recorded: their tenants' rows may be claimed again, and live views
   * may show them.
   */
  onLateFinished?: (tenantIds: string[]) => void;
  /**
   * Deliveries a move of this process stored already leased to `owner`
   * (lib/carriers/postgres/move.ts `Handoff`), held in `share` since they were handed
   * over: when there are some, the tick sends them instead of claiming.
   */
  handed?: () => ClaimedDelivery[] | undefined;
}

/**
 * Deliveries per claim, unless a consumer says otherwise. A claim takes a
 * lane of each tenant it visits (ten at most), so a claim of 100 carries
 * batches of about ten per request; chosen by measurement (bench/HISTORY.md).
 */
export const CONSUMER_BATCH_SIZE = 100;

/**
 * One claim-deliver-record round; after a full batch that finished whole,
 * the next batch is claimed in the same transaction that records this one,
 * up to `batchesPerTick` batches. A batch whose slowest deliveries are
 * still running after the share's `stragglerMs` is recorded without them:
 * they finish on their own (see lib/delivery/fair_share.ts).
 */
export async function consumeOnce(
  options: ConsumerOptions,
): Promise<TickResult> {
  const { share } = options;
  const batchSize = options.batchSize ?? CONSUMER_BATCH_SIZE;
  const leaseMs = consumerLeaseMs(options);
  const rounds = options.batchesPerTick ?? 5;
  // Deliveries to the subscribers this consumer serves, only: consumers of
  // different subscribers can share the queue.
  const subscribers = Object.keys(options.subscribers);
  const claim = (): ClaimOptions => ({
    limit: batchSize,
    leaseMs,
    subscribers,
    round: {
      after: share.after,
      perTenant: share.perTenant,
      perLane: share.perLane,
      held: share.held(),
      // As last read, when the claim is made: a pause written through this
      // pool shows at once, another process's within a read (its resume at
      // once, by NOTIFY). Read per claim, not per tick: a claim that waited
      // its turn, or came late in a tick, must not take a lane paused
      // meanwhile. It never waits on a pool connection.
      closed: share.closed(options.pauses?.known()),
    },
    onSent: options.onClaimSent,
  });
  // A handoff is held already, since it was handed over (relays.ts).
  const handed = options.handed?.();
  let batch = handed
    ? { claimed: handed, nextDueAt: null }
    : await share.claiming(() =>
      claimBatch(options.sql, options.owner, claim())
    );
  const touched = new Set<string>();
  // Wake for the earliest retry a batch scheduled: waiting for the poll
  // would turn a 1 s retry into a 5 s one (POLL_INTERVAL_MS).
  let retryAt = Infinity;
  for (let round = 1; batch.claimed.length > 0; round++) {
    if (batch.after !== undefined) share.after = batch.after;
    const claimed = batch.claimed;
    // A batch cut short by the share is as good as full: there is more to
    // claim once it is done, and waiting for a wake-up or the poll left a
    // slow tenant's other receivers seconds behind.
    const full = claimed.length === batchSize ||
      claimed.some((d) => share.atCap(d));
    if (full) options.onFullBatch?.();
    const { results, late } = await deliverBatch(options, claimed);
    for (const d of claimed) touched.add(d.tenantId);
    const ids = new Set(results.map((r) => r.id));
    const settled = claimed.filter((d) => ids.has(d.id));
    const room = share.release(settled);
    if (late) finishLate(options, claimed.filter((d) => !ids.has(d.id)), late);
    const chain = full && !late && round < rounds;
    let finished: number;
    if (chain) {
      // The finish and the next claim are one statement: it takes its turn.
      ({ finished, next: batch } = await share.claiming(async () => {
        const done = await finishAndClaim(
          options.sql,
          options.owner,
          results,
          claim(),
        );
        return { ...done, claimed: done.next.claimed };
      }));
    } else {
      finished = await finishDeliveries(options.sql, results);
    }
    recorded(options, settled, results, finished);
    for (const r of results) {
      if (r.state === "pending") {
        retryAt = Math.min(retryAt, Date.now() + r.delayMs);
      }
    }
    if (!chain) {
      return {
        // Room made for a claim turned away meanwhile: look again now that
        // these are recorded (a claim before that could not pass them).
        more: full || room,
        nextDueAt: retryAt < Infinity ? new Date(retryAt) : undefined,
        touched: [...touched],
      };
    }
  }
  if (batch.after !== undefined) share.after = batch.after;
  const due = Math.min(retryAt, batch.nextDueAt?.getTime() ?? Infinity);
  return {
    more: false,
    nextDueAt: due < Infinity ? new Date(due) : undefined,
    touched: touched.size > 0 ? [...touched] : undefined,
  };
}

/**
 * Records stragglers apart from their batch, each request's as its answer
 * comes: a quick receiver's deliveries left behind with a slow one's must
 * not wait for the slow one's timeout, holding their tenant's share all
 * the while (tests/core/messaging_stragglers_test.ts). Each finish is
 * fenced by the lease as any other.
 */
function finishLate(
  options: ConsumerOptions,
  claimed: ClaimedDelivery[],
  late: Late,
) {
  const { share } = options;
  const waiting = new Map(claimed.map((d) => [d.id, d]));
  const record = async (results: AttemptResult[]) => {
    const mine = results.flatMap((r) => waiting.get(r.id) ?? []);
    for (const d of mine) waiting.delete(d.id);
    try {
      const finished = await finishDeliveries(options.sql, results);
      recorded(options, mine, results, finished);
    } catch (error) {
      // Unrecorded: the deliveries stay leased, and are sent again once
      // the lease runs out; the receivers' inboxes answer the repeat.
      options.log.error("late_finish_failed", { error });
    } finally {
      share.release(mine);
      options.onLateFinished?.([...new Set(mine.map((d) => d.tenantId))]);
    }
  };
  share.detach(
    claimed.length,
    late(record)
      .catch((error) => options.log.error("late_send_failed", { error }))
      .finally(() => {
        // A send that failed as a whole answers nothing more: what it left
        // stays leased, as above, and leaves the share.
        const left = [...waiting.values()];
        if (share.release(left)) {
          options.onLateFinished?.([...new Set(left.map((d) => d.tenantId))]);
        }
      }),
  );
}

/**
 * A batch's stragglers: hands each request's results to `record` as they
 * come, and ends once every one was recorded.
 */
type Late = (
  record: (results: AttemptResult[]) => Promise<void>,
) => Promise<void>;

/**
 * Sends one claimed batch. Returns the results of the deliveries done
 * within the share's `stragglerMs` (all of them, when the batch was quick
 * or no more may be left running), and for the rest, a {@link Late}.
 */
async function deliverBatch(
  options: ConsumerOptions,
  claimed: ClaimedDelivery[],
): Promise<{ results: AttemptResult[]; late?: Late }> {
  const results: AttemptResult[] = [];
  let judged = (r: AttemptResult) => void results.push(r);
  const all = send(options, claimed, (r) => judged(r));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), options.share.stragglerMs);
  });
  const whole = await Promise.race([all.then(() => true), cut]);
  clearTimeout(timer);
  if (whole || !options.share.canDetach(claimed.length - results.length)) {
    await all;
    return { results };
  }
  // From here on, results go out in bunches: a request's results come in
  // one synchronous run, so a microtask later they are all there.
  let bunch: AttemptResult[] = [];
  let flush: (() => void) | undefined;
  const late: Late = async (record) => {
    const recording: Promise<void>[] = [];
    flush = () => {
      if (bunch.length === 0) return;
      recording.push(record(bunch));
      bunch = [];
    };
    flush();
    try {
      await all;
    } finally {
      flush();
      await Promise.all(recording);
    }
  };
  judged = (r) => {
    if (bunch.length === 0) queueMicrotask(() => flush?.());
    bunch.push(r);
  };
  return { results, late };
}
