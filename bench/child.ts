/**
 * Child processes of the benchmark (a worker, the whole app), driven by a
 * line protocol: the child prints `BENCH <event> <json>` lines on stdout and
 * reads `go` and `stop` lines on stdin. Every child is tracked, so that a
 * failure or a signal ends them all; /proc gives their memory and CPU.
 */
import { cpuSeconds, MemorySampler } from "./procfs.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const live = new Set<BenchChild>();

/**
 * The `--v8-flags=...` of a task in deno.json, so that a child runs as the
 * task would (`deno task worker` caps V8's young generation).
 */
export function taskV8Flags(task: string): string[] {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`));
  const command = String(config.tasks?.[task] ?? "");
  return command.match(/--v8-flags=\S+/g) ?? [];
}

export class BenchChild {
  readonly pid: number;
  readonly memory: MemorySampler;
  #process: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #events: { event: string; data: Record<string, unknown> }[] = [];
  #waiters: (() => void)[] = [];
  #stderr: string[] = [];
  #exited = false;
  #status: Promise<Deno.CommandStatus>;

  constructor(
    script: string,
    args: string[],
    env: Record<string, string>,
    denoFlags: string[] = [],
  ) {
    this.#process = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", ...denoFlags, script, ...args],
      cwd: ROOT,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.pid = this.#process.pid;
    this.memory = new MemorySampler(this.pid);
    this.#writer = this.#process.stdin.getWriter();
    this.#status = this.#process.status.then((s) => {
      this.#exited = true;
      this.#wakeAll();
      return s;
    });
    this.#read(this.#process.stdout, (line) => {
      const m = line.match(/^BENCH (\w+) ?(.*)$/);
      if (!m) return;
      this.#events.push({ event: m[1], data: m[2] ? JSON.parse(m[2]) : {} });
      this.#wakeAll();
    });
    // Keep the last lines of stderr to explain a failure.
    this.#read(this.#process.stderr, (line) => {
      this.#stderr.push(line);
      if (this.#stderr.length > 40) this.#stderr.shift();
    });
    live.add(this);
  }

  /** Waits for `BENCH <event>`; fails if the child exits or time runs out. */
  async expect(
    event: string,
    timeoutMs = 60_000,
  ): Promise<Record<string, unknown>> {
    const deadline = performance.now() + timeoutMs;
    while (true) {
      const found = this.#events.findIndex((e) => e.event === event);
      if (found >= 0) return this.#events.splice(found, 1)[0].data;
      if (this.#exited) {
        throw new Error(
          `child ${this.pid} exited before "${event}": ${this.stderrTail()}`,
        );
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(
          `child ${this.pid} did not say "${event}" within ${timeoutMs} ms: ${this.stderrTail()}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 1000));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#waiters.push(done);
      });
    }
  }

  async send(line: string) {
    await this.#writer.write(new TextEncoder().encode(line + "\n"));
  }

  /** CPU seconds so far (0 once it has exited). */
  cpuSeconds(): number {
    return cpuSeconds(this.pid) ?? 0;
  }

  stderrTail(): string {
    return this.#stderr.slice(-10).join(" | ").slice(-2000);
  }

  /**
   * Asks the child to stop, waits up to `graceMs`, then kills it. Returns
   * its peak memory in MB and its CPU seconds, read just before it exits.
   */
  async stop(
    graceMs = 15_000,
  ): Promise<{ peakMb: number; cpuSeconds: number }> {
    const peakMb = this.memory.stop();
    const cpu = this.cpuSeconds();
    if (!this.#exited) {
      await this.send("stop").catch(() => {});
      await this.#writer.close().catch(() => {});
      const timer = setTimeout(() => this.kill(), graceMs);
      await this.#status;
      clearTimeout(timer);
    }
    live.delete(this);
    return { peakMb, cpuSeconds: cpu };
  }

  kill() {
    if (this.#exited) return;
    try {
      this.#process.kill("SIGKILL");
    } catch {
      // exited meanwhile
    }
  }

  /** Resolves once the process has exited and its pipes are drained. */
  async closed() {
    await this.#status;
  }

  #wakeAll() {
    const waiters = this.#waiters.splice(0);
    for (const w of waiters) w();
  }

  async #read(stream: ReadableStream<Uint8Array>, onLine: (l: string) => void) {
    let buffer = "";
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        buffer += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buffer.indexOf("\n")) >= 0) {
          onLine(buffer.slice(0, i));
          buffer = buffer.slice(i + 1);
        }
      }
    } catch {
      // the child went away
    }
    if (buffer) onLine(buffer);
  }
}

/** Kills every child still running (on failure or a signal). */
export async function killAllChildren() {
  for (const child of [...live]) {
    child.memory.stop();
    child.kill();
    await child.closed().catch(() => {});
    live.delete(child);
  }
}

/**
 * In a child: the `go`/`stop` lines from stdin, one at a time. Ends (returns
 * "stop") when stdin closes, so a child never outlives its parent's pipe.
 */
export function stdinLines(): () => Promise<string> {
  const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream())
    .getReader();
  let buffer = "";
  return async () => {
    while (true) {
      const i = buffer.indexOf("\n");
      if (i >= 0) {
        const line = buffer.slice(0, i).trim();
        buffer = buffer.slice(i + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) return "stop";
      buffer += value;
    }
  };
}

/** In a child: tells the parent about `event`. */
export function say(event: string, data: Record<string, unknown> = {}) {
  console.log(`BENCH ${event} ${JSON.stringify(data)}`);
}
