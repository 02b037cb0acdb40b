/**
 * What a consumer process holds and may take no more of, as the ledger's
 * claims read it: lanes (tenant and subscriber pairs) as parallel lists,
 * ready for `unnest` in SQL. The process's share between tenants
 * (lib/delivery/fair_share.ts) fills them in.
 */

/** What a claim reads of the share: see `Round` in deliveries_sql.ts. */
export interface HeldLanes {
  tenantIds: string[];
  subscribers: string[];
  counts: number[];
}

/** (tenant, subscriber) pairs, as two parallel lists (for unnest in SQL). */
export interface LaneList {
  tenantIds: string[];
  subscribers: string[];
}

/** What a process may take no more deliveries of, for now. */
export interface Closed {
  /** Lanes held in full, and lanes paused (always full). */
  lanes: LaneList;
  /** Tenants held in full: their whole share. */
  tenantIds: string[];
}

/** Nothing held: a claim of a process that keeps no share. */
export const NOTHING_HELD: HeldLanes = {
  tenantIds: [],
  subscribers: [],
  counts: [],
};

/** Nothing closed: every lane and tenant may be taken. */
export const NOTHING_CLOSED: Closed = {
  lanes: { tenantIds: [], subscribers: [] },
  tenantIds: [],
};
