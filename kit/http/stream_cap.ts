/**
 * Long-lived responses (server-sent event streams) counted per owner, e.g.
 * per session: at most `perOwner` open at once, and all of an owner's
 * streams can be ended together (when its session ends). With `recheck`,
 * the owners of open streams are looked up every `everyMs` while any is
 * open, and those no longer live are ended: an owner can end where this
 * process does not see it (another process, a scheduled job).
 */

/** One open stream's place: abort `signal` ends it; `release` frees it. */
export interface StreamSlot {
  signal: AbortSignal;
  release(): void;
}

export interface Recheck {
  everyMs: number;
  /** Which of `owners` are still live. A failure leaves every stream open. */
  live(owners: string[]): Promise<Set<string>>;
}

export class StreamCap {
  #open = new Map<string, Set<AbortController>>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #checking = false;

  constructor(
    readonly perOwner: number,
    readonly recheck?: Recheck,
  ) {}

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
    this.#watch();
    return {
      signal: controller.signal,
      release: () => {
        owned.delete(controller);
        if (owned.size === 0 && this.#open.get(owner) === owned) {
          this.#open.delete(owner);
        }
        this.#watch();
      },
    };
  }

  /** Ends every open stream of `owner` (its session ended). */
  end(owner: string): void {
    const set = this.#open.get(owner);
    if (!set) return;
    this.#open.delete(owner);
    for (const controller of set) controller.abort();
    this.#watch();
  }

  /** The recheck runs while a stream is open, and only then. */
  #watch() {
    const recheck = this.recheck;
    if (!recheck) return;
    if (this.#open.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    } else {
      this.#timer ??= setInterval(() => this.#sweep(recheck), recheck.everyMs);
    }
  }

  async #sweep(recheck: Recheck) {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const owners = [...this.#open.keys()];
      const live = await recheck.live(owners);
      for (const owner of owners) if (!live.has(owner)) this.end(owner);
    } catch {
      // The next sweep looks again; a stream is never ended on a guess.
    } finally {
      this.#checking = false;
    }
  }

  /** How many streams `owner` has open. */
  count(owner: string): number {
    return this.#open.get(owner)?.size ?? 0;
  }
}
