/**
 * The labs, shared fairly between visitors, in this process.
 *
 * Why runs wait for each other at all:
 *
 * - The Queue Lab's workers claim every sandbox's printer deliveries (the
 *   claim names the subscriber, not the sandbox), so two Queue Lab runs at
 *   once would print each other's tickets. They go one at a time
 *   (`oneAtATime`).
 * - A ledger run claims only its own sandbox's rows (the relay's claim
 *   names the sandbox), so runs of different sandboxes may overlap; two of
 *   one sandbox may not, as each starts by deleting that sandbox's lab rows
 *   (`onePerSandbox`).
 *
 * Why nobody waits long (`LabGate`): a visitor holds at most one run,
 * queued or running; each lab has a lane with a bounded queue; a run that
 * has not started within `maxWaitMs` gives up. Every refusal is a
 * `LabBusy` that says how many seconds to wait. Before this, one visitor
 * firing 20 Queue Lab runs held another's 20 ms ledger run for 20 s.
 */

let tail: Promise<unknown> = Promise.resolve();

/** Runs `fn` after every Queue Lab run that was asked for before it. */
export function oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const run = tail.then(fn, fn);
  tail = run.catch(() => {});
  return run;
}

const tails = new Map<string, Promise<unknown>>();

/** Runs `fn` after every run of `sandboxId` that was asked for before it. */
export function onePerSandbox<T>(
  sandboxId: string,
  fn: () => Promise<T>,
): Promise<T> {
  const before = tails.get(sandboxId) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const settled = run.catch(() => {});
  tails.set(sandboxId, settled);
  // The map holds only sandboxes with a run going.
  settled.then(() => {
    if (tails.get(sandboxId) === settled) tails.delete(sandboxId);
  });
  return run;
}

/** A run refused for now; `retryAfterSeconds` says when to try again. */
export class LabBusy extends Error {
  override name = "LabBusy";
  constructor(message: string, readonly retryAfterSeconds: number) {
    super(message);
  }
}

export type Lab = "ledger" | "queue";

export interface LaneOptions {
  /** Runs of this lab at once. */
  concurrency: number;
  /** Runs that may wait for a turn; one more is refused. */
  maxWaiting: number;
  /** A run that has not started after this long is refused. */
  maxWaitMs: number;
  /** What a run takes, until runs have been timed. */
  typicalMs: number;
}

interface Waiter {
  start(): void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * One lab's runs: `concurrency` at once, at most `maxWaiting` in line,
 * first come first served. Modes of a run: waiting (in line, until a run
 * ends or its wait runs out), running, done.
 */
export class Lane {
  #running = 0;
  #waiting: Waiter[] = [];
  #averageMs: number;

  constructor(readonly name: Lab, readonly options: LaneOptions) {
    this.#averageMs = options.typicalMs;
  }

  /** Runs `fn` in its turn, or throws LabBusy. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running >= this.options.concurrency || this.#waiting.length) {
      await this.#turn();
    } else {
      this.#running++;
    }
    const started = performance.now();
    try {
      return await fn();
    } finally {
      // A moving average over about the last five runs.
      this.#averageMs = 0.8 * this.#averageMs +
        0.2 * (performance.now() - started);
      this.#running--;
      this.#next();
    }
  }

  /** Seconds until a run asked for now would likely be done (at least 1). */
  expectedWaitSeconds(): number {
    const ahead = this.#running + this.#waiting.length + 1;
    const ms = Math.ceil(ahead / this.options.concurrency) * this.#averageMs;
    return Math.max(1, Math.ceil(ms / 1000));
  }

  /** Seconds one run takes, rounded up (at least 1). */
  runSeconds(): number {
    return Math.max(1, Math.ceil(this.#averageMs / 1000));
  }

  #turn(): Promise<void> {
    const { maxWaiting, maxWaitMs } = this.options;
    if (this.#waiting.length >= maxWaiting) {
      throw new LabBusy(
        `the ${this.name} lab is busy (${this.#waiting.length} runs waiting); try again shortly`,
        this.expectedWaitSeconds(),
      );
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          this.#running++;
          resolve();
        },
        timer: setTimeout(() => {
          this.#waiting = this.#waiting.filter((w) => w !== waiter);
          reject(
            new LabBusy(
              `the ${this.name} lab stayed busy for ${maxWaitMs} ms; try again shortly`,
              this.expectedWaitSeconds(),
            ),
          );
        }, maxWaitMs),
      };
      this.#waiting.push(waiter);
    });
  }

  #next() {
    while (this.#running < this.options.concurrency && this.#waiting.length) {
      this.#waiting.shift()!.start();
    }
  }
}

/**
 * The labs' lanes. The Queue Lab: one at a time (see above); a run takes
 * about a second, so three in line keep a wait near three seconds, and
 * five seconds is the most anyone waits. The ledger: a run takes about
 * 20 ms, mostly round trips to PostgreSQL, so four overlap on two cores
 * without crowding the pool (20 connections).
 */
export const LANES: Record<Lab, LaneOptions> = {
  queue: { concurrency: 1, maxWaiting: 3, maxWaitMs: 5_000, typicalMs: 1_000 },
  ledger: { concurrency: 4, maxWaiting: 16, maxWaitMs: 5_000, typicalMs: 50 },
};

/**
 * Admits lab runs: one per visitor (sandbox) queued or running, across
 * both labs, then the lab's lane.
 *
 * @example
 * ```ts
 * const gate = new LabGate(LANES);
 * await gate.run(sandboxId, "ledger", () => runLedger(...));
 * ```
 */
export class LabGate {
  #lanes: Record<Lab, Lane>;
  #visitors = new Map<string, Lab>();

  constructor(lanes: Record<Lab, LaneOptions>) {
    this.#lanes = {
      queue: new Lane("queue", lanes.queue),
      ledger: new Lane("ledger", lanes.ledger),
    };
  }

  /** Runs `fn` for `visitor` in `lab`'s lane, or throws LabBusy. */
  async run<T>(visitor: string, lab: Lab, fn: () => Promise<T>): Promise<T> {
    const going = this.#visitors.get(visitor);
    if (going) {
      throw new LabBusy(
        `your ${going} lab run is still going; one run at a time`,
        this.#lanes[going].runSeconds(),
      );
    }
    this.#visitors.set(visitor, lab);
    try {
      return await this.#lanes[lab].run(fn);
    } finally {
      this.#visitors.delete(visitor);
    }
  }
}

/** The process's gate, for the labs' pages and their JSON twins. */
export const labGate = new LabGate(LANES);
