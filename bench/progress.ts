/**
 * Progress on stderr while the benchmark runs: which scenario and step, and
 * a counter or a percentage. On a terminal one line is rewritten in place;
 * otherwise (a pipe, a test) a line is printed at most every two seconds.
 */

const encoder = new TextEncoder();

export class Progress {
  #tty = Deno.stderr.isTerminal();
  #label = "";
  #lastPrint = 0;
  #dirty = false;
  #started = performance.now();

  /** Starts a new step: `[scenario] step`. */
  step(label: string) {
    this.#clear();
    this.#label = label;
    this.#lastPrint = 0;
    this.update("");
  }

  /** Updates the current step's counter; cheap to call often. */
  update(text: string) {
    const now = performance.now();
    const clock = `${((now - this.#started) / 1000).toFixed(0)}s`;
    const message = `${clock.padStart(5)} ${this.#label}${
      text ? `: ${text}` : ""
    }`;
    if (this.#tty) {
      if (now - this.#lastPrint < 100) return;
      this.#write(`\r\x1b[K${message}`);
      this.#dirty = true;
    } else {
      if (text && now - this.#lastPrint < 2000) return;
      this.#write(message + "\n");
    }
    this.#lastPrint = now;
  }

  /** A line that stays (a result, a warning). */
  note(text: string) {
    this.#clear();
    this.#write(`      ${text}\n`);
  }

  /** "n/total (p %)" for counters. */
  static count(n: number, total: number): string {
    const pct = total > 0 ? Math.floor((n / total) * 100) : 0;
    return `${n}/${total} (${pct} %)`;
  }

  #clear() {
    if (this.#dirty) this.#write("\r\x1b[K");
    this.#dirty = false;
  }

  #write(text: string) {
    Deno.stderr.writeSync(encoder.encode(text));
  }
}
