/**
 * Which ledger holds a delivery, where there are several (a database per
 * sender, each with the queue schema). Each ledger's delivery ids step by
 * `slots` from a slot of its own (its sequence starts at the slot and
 * increments by `slots`), so an id names its ledger with no look-up and
 * ids never collide across ledgers.
 *
 * @example
 * ```ts
 * const router = new LedgerRouter(new Map([[1, "orders"], [2, "billing"]]), 8);
 * router.holderOf(9); // "orders": 9 = 1 + 8
 * ```
 */
export class LedgerRouter<Name extends string = string> {
  readonly #bySlot: ReadonlyMap<number, Name>;

  constructor(bySlot: ReadonlyMap<number, Name>, readonly slots: number) {
    for (const slot of bySlot.keys()) {
      if (!Number.isInteger(slot) || slot < 1 || slot > slots) {
        throw new RangeError(`a ledger's slot is 1 to ${slots}, not ${slot}`);
      }
    }
    this.#bySlot = bySlot;
  }

  /** The ledger that holds delivery `id`, if any has its slot. */
  holderOf(id: number): Name | undefined {
    return this.#bySlot.get(((id - 1) % this.slots) + 1);
  }

  /** `ids` by the ledger that holds each; ids of no ledger are left out. */
  split(ids: readonly number[]): Map<Name, number[]> {
    const out = new Map<Name, number[]>();
    for (const id of ids) {
      const holder = this.holderOf(id);
      if (holder !== undefined) out.set(holder, [...out.get(holder) ?? [], id]);
    }
    return out;
  }
}
