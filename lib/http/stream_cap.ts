/**
 * Long-lived responses (server-sent event streams) counted per owner, e.g.
 * per session: at most `perOwner` open at once, and all of an owner's
 * streams can be ended together (when its session ends).
 */

/** One open stream's place: abort `signal` ends it; `release` frees it. */
export interface StreamSlot {
  signal: AbortSignal;
  release(): void;
}

export class StreamCap {
  #open = new Map<string, Set<AbortController>>();

  constructor(readonly perOwner: number) {}

  /**
   * A slot for a new stream of `owner`, or null when `owner` already has
   * `perOwner` open. Call `release` when the stream ends, however it ends.
   *
   * @example
   * ```ts
   * const slot = streams.open(session.id);
   * if (!slot) throw new HttpError(429, "too many open streams");
   * return sseResponse(slot.signal, (channel) => () => slot.release());
   * ```
   */
  open(owner: string): StreamSlot | null {
    let set = this.#open.get(owner);
    if (set && set.size >= this.perOwner) return null;
    if (!set) {
      set = new Set();
      this.#open.set(owner, set);
    }
    const controller = new AbortController();
    set.add(controller);
    const owned = set;
    return {
      signal: controller.signal,
      release: () => {
        owned.delete(controller);
        if (owned.size === 0 && this.#open.get(owner) === owned) {
          this.#open.delete(owner);
        }
      },
    };
  }

  /** Ends every open stream of `owner` (its session ended). */
  end(owner: string): void {
    const set = this.#open.get(owner);
    if (!set) return;
    this.#open.delete(owner);
    for (const controller of set) controller.abort();
  }

  /** How many streams `owner` has open. */
  count(owner: string): number {
    return this.#open.get(owner)?.size ?? 0;
  }
}
