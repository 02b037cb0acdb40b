/**
 * A CPU profile of a benchmark child, taken through its inspector (Deno has
 * no --cpu-prof): `BENCH_PROFILE=<dir> deno task bench --only deliver`
 * starts each drain's workers with `--inspect` on a free port, profiles them
 * from `go` to the end of the drain, writes `<dir>/<role>-<pid>.cpuprofile`
 * (open it in Chromium's DevTools) and prints where the self time went.
 */
import { freePort } from "../kit/postgres/embedded.ts";

/** The profile directory asked for, or undefined. */
export const PROFILE_DIR: string | undefined = Deno.env.get("BENCH_PROFILE") ||
  undefined;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

/** One child's inspector session. */
export class Profiler {
  #socket: WebSocket;
  #next = 1;
  #pending = new Map<number, (result: Record<string, unknown>) => void>();

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      const answer = this.#pending.get(message.id);
      if (!answer) return;
      this.#pending.delete(message.id);
      answer(message.result ?? { error: message.error });
    };
  }

  /** The flag that opens a child's inspector on a port of its own. */
  static async flag(): Promise<{ flag: string; port: number }> {
    const port = await freePort();
    return { flag: `--inspect=127.0.0.1:${port}`, port };
  }

  /** Connects to the inspector on `port` (the child has started). */
  static async connect(port: number): Promise<Profiler> {
    const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`))
      .json() as { webSocketDebuggerUrl: string }[];
    const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    return new Profiler(socket);
  }

  #call(method: string, params: Record<string, unknown> = {}) {
    const id = this.#next++;
    this.#socket.send(JSON.stringify({ id, method, params }));
    return new Promise<Record<string, unknown>>((resolve) =>
      this.#pending.set(id, resolve)
    );
  }

  async start(): Promise<void> {
    await this.#call("Profiler.enable");
    // 250 µs: fine enough for statements of a tenth of a millisecond.
    await this.#call("Profiler.setSamplingInterval", { interval: 250 });
    await this.#call("Profiler.start");
  }

  /** Stops, writes the profile to `file`, returns a summary of self time. */
  async stop(file: string): Promise<string> {
    const { profile } = await this.#call("Profiler.stop") as {
      profile: CpuProfile;
    };
    this.#socket.close();
    await Deno.writeTextFile(file, JSON.stringify(profile));
    return summarize(profile);
  }
}

/** The 25 costliest functions by self time, with their share. */
export function summarize(profile: CpuProfile): string {
  const hits = new Map<number, number>();
  for (const id of profile.samples ?? []) {
    hits.set(id, (hits.get(id) ?? 0) + 1);
  }
  const total = profile.samples?.length ?? 0;
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const n = hits.get(node.id) ?? node.hitCount ?? 0;
    if (n === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.replace(/^.*\/node_modules\/\.deno\//, "npm:")
      .replace(/^file:\/\/.*?\/(lib|services|bench|routes)\//, "$1/");
    const key = `${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + n);
  }
  const seconds = (profile.endTime - profile.startTime) / 1e6;
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25);
  return [
    `${total} samples over ${seconds.toFixed(1)} s`,
    ...top.map(([key, n]) =>
      `${(100 * n / Math.max(1, total)).toFixed(1).padStart(5)} %  ${key}`
    ),
  ].join("\n");
}
