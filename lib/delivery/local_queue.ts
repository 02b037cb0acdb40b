/**
 * The consumers of one process, as the process wakes them, and the
 * deliveries its relay hands them. Two optimisations live here, each
 * measured, and nothing else:
 *
 * - **One wake-up per hint.** A hint (a NOTIFY, a publish of this process)
 *   wakes one consumer, not all: on an idle queue every woken consumer runs
 *   a claim and all but one find nothing, while the one that found work
 *   competes with them for the same two cores (measured: 4 claims and 3
 *   empty look-ups per hint, twice per message). A consumer that claims a
 *   full batch wakes the next, so a backlog still gets every consumer.
 * - **Handoffs.** A move made while a consumer is idle stores its deliveries
 *   (at most a batch) already leased to this process and hands them over:
 *   the consumer sends them without a claim, one transaction less at each
 *   hop of a message.
 *
 * A consumer is, here, in one of four modes:
 *
 * | mode    | what it is                                     | left by                                   |
 * | ------- | ---------------------------------------------- | ----------------------------------------- |
 * | idle    | asleep until woken, a timer or the poll        | a hint, a handoff, its timer or the poll  |
 * | owed    | woken by a hint, its claim not yet sent        | its claim going out (`claimSent`), or a handoff taken instead |
 * | busy    | in a tick: claiming, sending, recording        | the end of its tick                        |
 * | stopped | after stop()                                   | never                                      |
 *
 * A claim sees everything committed before it was sent, so while some
 * consumer is owed, further hints need no one else.
 */
import type { ClaimedDelivery } from "../ledger/delivery.ts";
import type { Loop } from "../wake/loop.ts";

export class LocalQueue {
  readonly #consumers: Loop[] = [];
  readonly #owed = new Set<Loop>();
  /** Handed batches waiting for a consumer's tick, oldest first. */
  readonly #handoffs: ClaimedDelivery[][] = [];

  /** @param batchSize handoffs are joined up to one claim's batch */
  constructor(readonly batchSize: number) {}

  add(consumer: Loop) {
    this.#consumers.push(consumer);
  }

  get consumers(): readonly Loop[] {
    return this.#consumers;
  }

  /** True when some consumer is idle: a move may hand its deliveries over. */
  get anyIdle(): boolean {
    return this.#consumers.some((c) => c.idle);
  }

  /** A hint: wake one idle consumer, unless one is owed already. */
  hint() {
    if (this.#owed.size > 0) return;
    const idle = this.#consumers.find((c) => c.idle);
    if (idle) {
      this.#owed.add(idle);
      idle.wake();
      return;
    }
    // All busy: each looks again after its batch. They are not owed: a
    // consumer that goes idle meanwhile must still be woken by the next
    // hint, not wait for the others' batches.
    this.wakeAll();
  }

  /** Wakes every consumer (a reconnect, an outside request). */
  wakeAll() {
    this.#consumers.forEach((c) => c.wake());
  }

  /** `consumer`'s claim went out: it no longer stands for the hints. */
  claimSent(consumer: Loop) {
    this.#owed.delete(consumer);
  }

  /** A move handed `batch` over: an idle consumer sends it. */
  hand(batch: ClaimedDelivery[]) {
    this.#handoffs.push(batch);
    const idle = this.#consumers.find((c) => c.idle);
    if (idle) idle.wake();
    else this.wakeAll();
  }

  /** True while handed batches wait. */
  get handing(): boolean {
    return this.#handoffs.length > 0;
  }

  /**
   * The handed batches waiting, oldest first, joined up to a claim's batch
   * (at least one): under load, moves are small and come faster than ticks.
   * A consumer that was owed and takes a handoff instead leaves its hint to
   * another.
   */
  take(consumer?: Loop): ClaimedDelivery[] | undefined {
    const batch = this.#handoffs.shift();
    if (!batch) return undefined;
    while (
      this.#handoffs.length > 0 &&
      batch.length + this.#handoffs[0].length <= this.batchSize
    ) batch.push(...this.#handoffs.shift()!);
    if (consumer && this.#owed.delete(consumer)) this.hint();
    return batch;
  }
}
