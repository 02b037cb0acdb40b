/**
 * One consumer process's share of the work between tenants: how many
 * deliveries of each tenant it holds, where its next round of claims
 * starts, and the deliveries it left running when they were too slow to
 * wait for.
 *
 * Three rules keep one tenant from slowing another:
 * - claims go round-robin across tenants (lib/ledger/deliveries_sql.ts);
 * - a process holds at most `perTenant` deliveries of one tenant, and at
 *   most `perLane` of one tenant for one subscriber (a lane), so a tenant
 *   whose receiver is slow fills part of the process, never all, and part
 *   of its own share, so that its other receivers still get theirs;
 * - a delivery still running `stragglerMs` after its batch started is left
 *   to finish on its own (up to `maxDetached` at once): the consumer records
 *   the rest of its batch and claims again, instead of waiting for the
 *   slowest delivery, which a slow receiver holds up to the delivery timeout.
 *
 * The share is per process: several processes may each hold `perTenant` of
 * one tenant, which is what keeps every process's consumers free for the
 * other tenants. What the process may take no more of ({@link
 * FairShare.closed}) is left by its consumers' claims and by its relay's
 * handoffs alike: a handoff is held from the moment it is handed over, so a
 * tenant whose receiver is slow cannot fill its whole share through the
 * relay, with its other receivers' deliveries left waiting behind it.
 * Claims in one process take turns ({@link FairShare.claiming}): each
 * sees what the one before it took, so the caps hold.
 */

import { type Closed, type HeldLanes, type LaneList } from "../ledger/lanes.ts";

/** Settings of a {@link FairShare}. */
export interface FairShareOptions {
  /** Deliveries of one tenant that the process holds at most at once. */
  perTenant: number;
  /** Of those, deliveries to one subscriber (a lane). */
  perLane: number;
  /** Slow deliveries that may run on their own at once; past this, wait. */
  maxDetached: number;
  /** How long a batch waits for its slowest deliveries before leaving them. */
  stragglerMs: number;
}

/** A delivery as far as the share is concerned. */
export interface Lane {
  tenantId: string;
  subscriber: string;
}

export class FairShare {
  readonly perTenant: number;
  readonly perLane: number;
  readonly maxDetached: number;
  readonly stragglerMs: number;
  /** The tenant after which the next claim's round starts. */
  after: string | null = null;
  /** Held deliveries per lane, keyed by tenant id and subscriber. */
  #held = new Map<string, { lane: Lane; n: number }>();
  #detached = 0;
  #running = new Set<Promise<void>>();
  /**
   * Tenants that a claim or a handoff was told were closed (in full or in
   * one lane) since some of their deliveries were last released. The
   * consumer whose release makes room must look again: the one turned away
   * went to sleep, and no one else wakes for the rows it left behind.
   */
  #turnedAway = new Set<string>();
  /** The claim whose turn it is, or the last one's end. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(options: FairShareOptions) {
    this.perTenant = options.perTenant;
    this.perLane = options.perLane;
    this.maxDetached = options.maxDetached;
    this.stragglerMs = options.stragglerMs;
  }

  /**
   * Runs `claim` once the process's claims before it are done, and holds
   * what it took before the next one starts. Two claims that ran at once
   * would both read the same held counts, and a slow lane could then fill
   * its tenant's whole share, two claims' worth at a time. A claim is one
   * statement, a few milliseconds, so the wait is short.
   */
  claiming<T extends { claimed: readonly Lane[] }>(
    claim: () => Promise<T>,
  ): Promise<T> {
    const mine = this.#turn.then(async () => {
      const batch = await claim();
      this.hold(batch.claimed);
      return batch;
    });
    this.#turn = mine.catch(() => {});
    return mine;
  }

  /** Counts claimed deliveries as held. */
  hold(deliveries: readonly Lane[]) {
    for (const d of deliveries) {
      const key = `${d.tenantId}\u0000${d.subscriber}`;
      const held = this.#held.get(key);
      if (held) held.n++;
      else {
        this.#held.set(key, {
          lane: { tenantId: d.tenantId, subscriber: d.subscriber },
          n: 1,
        });
      }
    }
  }

  /**
   * Counts finished (or given up) deliveries as no longer held. Returns
   * true when this made room for a tenant that a claim or a handoff was
   * turned away from meanwhile: the caller should claim again once it has
   * recorded these, or the rows left behind wait for the poll.
   */
  release(deliveries: readonly Lane[]): boolean {
    let room = false;
    for (const d of deliveries) {
      const key = `${d.tenantId}\u0000${d.subscriber}`;
      const held = this.#held.get(key);
      if (held && --held.n <= 0) this.#held.delete(key);
      if (this.#turnedAway.delete(d.tenantId)) room = true;
    }
    return room;
  }

  /**
   * True when the process holds all it may of `d`'s tenant or lane: a
   * claim may then have left due deliveries of it behind, to be claimed as
   * soon as some of these are finished.
   */
  atCap(d: Lane): boolean {
    let tenant = 0;
    for (const { lane, n } of this.#held.values()) {
      if (lane.tenantId !== d.tenantId) continue;
      if (lane.subscriber === d.subscriber && n >= this.perLane) return true;
      tenant += n;
    }
    return tenant >= this.perTenant;
  }

  /** The lanes held, for the claim. */
  held(): HeldLanes {
    const out: HeldLanes = { tenantIds: [], subscribers: [], counts: [] };
    for (const { lane, n } of this.#held.values()) {
      out.tenantIds.push(lane.tenantId);
      out.subscribers.push(lane.subscriber);
      out.counts.push(n);
    }
    return out;
  }

  /**
   * What this process may take no more of now: the lanes it holds in full,
   * the `paused` lanes beside them (lib/ledger/pauses.ts), and the tenants
   * it holds its whole share of. Both the claim and a move's handoff leave
   * these, so the tenants held in full count as turned away (see
   * {@link release}).
   */
  closed(paused?: LaneList): Closed {
    const lanes: LaneList = {
      tenantIds: [...paused?.tenantIds ?? []],
      subscribers: [...paused?.subscribers ?? []],
    };
    const totals = new Map<string, number>();
    for (const { lane, n } of this.#held.values()) {
      totals.set(lane.tenantId, (totals.get(lane.tenantId) ?? 0) + n);
      if (n < this.perLane) continue;
      lanes.tenantIds.push(lane.tenantId);
      lanes.subscribers.push(lane.subscriber);
      this.#turnedAway.add(lane.tenantId);
    }
    const tenantIds = [...totals]
      .filter(([, n]) => n >= this.perTenant)
      .map(([id]) => id);
    for (const id of tenantIds) this.#turnedAway.add(id);
    return { lanes, tenantIds };
  }

  /** True when `n` more deliveries may be left running on their own. */
  canDetach(n: number): boolean {
    return this.#detached + n <= this.maxDetached;
  }

  /** Leaves `n` deliveries running as `work`, which records them. */
  detach(n: number, work: Promise<void>) {
    this.#detached += n;
    const running: Promise<void> = work.finally(() => {
      this.#detached -= n;
      this.#running.delete(running);
    });
    this.#running.add(running);
  }

  /** Deliveries running on their own now. */
  get detached(): number {
    return this.#detached;
  }

  /** Waits until every detached delivery was recorded (for stop()). */
  async settle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
  }
}
