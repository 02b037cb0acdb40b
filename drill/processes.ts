/**
 * The processes a drill starts and hurts: its own embedded PostgreSQL (the
 * one the app would start, kit/postgres/embedded.ts, which brings a dead
 * server back on the same port by itself), the web app (`main.ts`, as
 * `deno task start` runs it, but on the drill's server) and the worker
 * processes (`workers/main.ts`, as `deno task worker`). Everything listens
 * on loopback, on free ports; each child's output goes to a log file of its
 * own beside the report.
 */
import {
  type EmbeddedCluster,
  startEmbedded,
} from "../kit/postgres/embedded.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { withDatabase } from "../lib/db/connect.ts";
import type { Logger } from "../lib/log/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/**
 * Settings of every bakery process of a drill. Retries span the longest a
 * message can be held up by a fault (a consumer's lease of 10 s after a
 * kill or a freeze), so that a receiver's "not yet" is retried past it;
 * polls and retries are short, so that the system settles within seconds
 * of a fault, not minutes.
 */
export const SETTINGS = {
  RETRY_DELAYS_MS: "200,1000,3000,6000",
  CHECKOUT_RETRY_DELAYS_MS: "100,200,400,800,1600,3200,6400",
  RELAY_RETRY_MS: "200",
  POLL_INTERVAL_MS: "500",
  DELIVERY_TIMEOUT_MS: "2000",
  SANDBOX_WIPE: "off",
  RETENTION: "off",
  RATE_LIMIT_PER_MINUTE: "0",
  LOG_LEVEL: "warn",
};

/** The drill's PostgreSQL: an embedded cluster in a directory of its own. */
export class Postgres {
  private constructor(
    readonly dataDir: string,
    readonly cluster: EmbeddedCluster,
    /** The database the app opens (`bakery`, as `deno task start` names it). */
    readonly url: string,
  ) {}

  static async start(dataDir: string, log: Logger): Promise<Postgres> {
    await Deno.mkdir(dataDir, { recursive: true });
    const cluster = await startEmbedded({
      dataDir,
      log,
      // Room for the app's pools and a few workers', each up to 13.
      postgresFlags: ["-c", "max_connections=300"],
    });
    await ensureDatabase(cluster.url, "bakery");
    return new Postgres(dataDir, cluster, withDatabase(cluster.url, "bakery"));
  }

  /** The postmaster's pid now, from its lock file (it changes on restart). */
  async postmasterPid(): Promise<number | null> {
    try {
      const text = await Deno.readTextFile(`${this.dataDir}/pg/postmaster.pid`);
      return Number(text.split("\n")[0]) || null;
    } catch {
      return null;
    }
  }

  /**
   * Sends `signal` to the postmaster: SIGKILL (a crash), SIGINT (a fast
   * shutdown) or SIGQUIT (an immediate one). The cluster starts it again.
   */
  async signal(signal: Deno.Signal): Promise<number | null> {
    const pid = await this.postmasterPid();
    if (pid) Deno.kill(pid, signal);
    return pid;
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }
}

/** A Deno child of the drill: the web app or a worker. */
export class Child {
  #child: Deno.ChildProcess | undefined;
  #log: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #copies: Promise<void>[] = [];
  restarts = 0;

  constructor(
    readonly name: string,
    readonly script: string,
    readonly env: Record<string, string>,
    readonly logPath: string,
  ) {}

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    if (!this.#log) {
      const file = await Deno.open(this.logPath, {
        create: true,
        append: true,
      });
      this.#log = file.writable.getWriter();
    }
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", this.script],
      cwd: ROOT,
      env: this.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    // Both streams are read to their end, whatever happens to the file: a
    // pipe nobody reads fills up and blocks the child's next log line.
    const log = this.#log;
    for (const stream of [child.stdout, child.stderr]) {
      this.#copies.push(
        (async () => {
          for await (const chunk of stream) {
            await log.write(chunk).catch(() => {});
          }
        })().catch(() => {}),
      );
    }
  }

  /** Sends `signal`; with SIGKILL, waits until the process is gone. */
  async kill(signal: Deno.Signal): Promise<void> {
    const child = this.#child;
    if (!child) return;
    try {
      child.kill(signal);
    } catch {
      // Exited already.
    }
    if (signal === "SIGKILL") {
      await child.status;
      this.#child = undefined;
    }
  }

  /** SIGTERM, up to `graceMs`, then SIGKILL; closes the log. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.#child;
    if (child) {
      // A frozen process must run again to hear SIGTERM.
      await this.kill("SIGCONT");
      await this.kill("SIGTERM");
      const timer = setTimeout(() => this.kill("SIGKILL"), graceMs);
      await child.status;
      clearTimeout(timer);
      this.#child = undefined;
    }
    await Promise.all(this.#copies);
    await this.#log?.close().catch(() => {});
    this.#log = undefined;
  }
}

/** Polls `GET /health` until it answers 200, for at most `ms`. */
export async function waitHealthy(port: number, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  let last = "no answer";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, {
        signal: AbortSignal.timeout(2_000),
      });
      await res.body?.cancel();
      if (res.status === 200) return;
      last = `answered ${res.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the app was not healthy within ${ms} ms: ${last}`);
}
