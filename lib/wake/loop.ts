/**
 * A worker loop: run a tick; when it found a full batch, run again at once;
 * otherwise sleep until woken (a notification, an in-process signal), until
 * the earliest known next attempt, or until the poll interval has passed,
 * whichever comes first. The poll catches what a missed notification would
 * have woken.
 */
import type { Logger } from "../log/mod.ts";

export interface TickResult {
  /** True when the batch was full: there is probably more to do now. */
  more: boolean;
  /** When the earliest waiting row becomes due, if known. */
  nextDueAt?: Date;
  /** Tenants whose rows this tick changed (for live views). */
  touched?: string[];
}

export interface LoopOptions {
  name: string;
  tick: () => Promise<TickResult>;
  pollMs: number;
  log: Logger;
  /** Called after a tick that changed rows of these tenants. */
  onTouched?: (tenantIds: string[]) => void;
}

export class Loop {
  #options: LoopOptions;
  #stopped = false;
  #woken = false;
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #failures = 0;

  constructor(options: LoopOptions) {
    this.#options = options;
  }

  start(): void {
    this.#running ??= this.#run();
  }

  /** True while sleeping: not in a tick and not yet woken for the next. */
  get idle(): boolean {
    return this.#wake !== undefined && !this.#woken && !this.#stopped;
  }

  /** Asks for a tick now (or right after the current one). */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Stops claiming and waits for the tick in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#running;
  }

  async #run() {
    const { log, name, pollMs } = this.#options;
    while (!this.#stopped) {
      this.#woken = false;
      let result: TickResult;
      try {
        result = await this.#options.tick();
        this.#failures = 0;
      } catch (error) {
        // A database that went away: log, back off, try again. Never exit
        // the loop on an error, or a blip would stop delivery for good.
        this.#failures++;
        log.error("loop_error", {
          loop: name,
          error,
          failures: this.#failures,
        });
        result = { more: false };
        await this.#sleep(
          Math.min(10_000, 200 * 2 ** Math.min(this.#failures, 6)),
        );
        continue;
      }
      if (result.touched?.length) this.#options.onTouched?.(result.touched);
      if (this.#stopped) break;
      if (result.more || this.#woken) continue;
      let wait = pollMs;
      if (result.nextDueAt) {
        wait = Math.min(
          wait,
          Math.max(0, result.nextDueAt.getTime() - Date.now()),
        );
      }
      await this.#sleep(wait);
    }
  }

  #sleep(ms: number): Promise<void> {
    if (this.#woken || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
