/**
 * A nats-server of its own, for the test run (tests/run.ts) and for tests
 * that kill or restart the broker: JetStream on, on loopback, a free port
 * and a store directory of its own, which a restart keeps, with the most
 * durable setting the server's version has. Without a `nats-server` on PATH the tests that need one are
 * registered as ignored, and the reason is printed once.
 */
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../kit/postgres/embedded.ts";
import { findOnPath } from "./_setup_tools.ts";

/** The nats-server binary found on PATH, or null. */
export const NATS_SERVER: string | null = findOnPath("nats-server");

/** Why the tests that start a server cannot run here, or null. */
export const natsServerMissing: string | null = NATS_SERVER
  ? null
  : "no nats-server on PATH (Debian: apt-get install nats-server)";
if (natsServerMissing) console.log(`skipped: ${natsServerMissing}`);

/** `Deno.test` for a test that starts its own nats-server. */
export function natsServerTest(name: string, fn: () => Promise<void>) {
  Deno.test({ name, ignore: natsServerMissing !== null, fn });
}

/**
 * The server's most durable setting, where its version has one: an fsync
 * after every write (`sync_interval: always`, from nats-server 2.10; 2.9
 * refuses the field and fsyncs every two minutes). The flags that set it,
 * or none.
 */
async function durableFlags(storeDir: string): Promise<string[]> {
  const config = `${storeDir}.conf`;
  await Deno.writeTextFile(config, "jetstream {\n  sync_interval: always\n}\n");
  const { code } = await new Deno.Command(NATS_SERVER!, {
    args: ["-c", config, "-t"],
    stdout: "null",
    stderr: "null",
  }).output();
  if (code === 0) return ["-c", config];
  await Deno.remove(config);
  return [];
}

/** A running (or stopped) nats-server with its port and store kept. */
export class NatsServer {
  #child: Deno.ChildProcess | undefined;
  #stderr: Promise<string> = Promise.resolve("");

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    readonly flags: string[],
  ) {}

  /** The URL clients connect to. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /**
   * Starts `size` servers as one cluster on loopback (JetStream on each,
   * named n0, n1, ...), all at once: JetStream answers only once a
   * majority has elected its leader. Ready when it returns.
   */
  static async cluster(size = 3): Promise<NatsServer[]> {
    return await onFreshPorts(() => NatsServer.#cluster(size));
  }

  static async #cluster(size: number): Promise<NatsServer[]> {
    const routes: number[] = [];
    for (let i = 0; i < size; i++) routes.push(await freePort());
    const servers: NatsServer[] = [];
    for (let i = 0; i < size; i++) {
      const storeDir = await Deno.makeTempDir({ prefix: "bakery-nats-" });
      servers.push(
        new NatsServer(await freePort(), storeDir, [
          ...await durableFlags(storeDir),
          "--name",
          `n${i}`,
          "--cluster_name",
          "bakery_test",
          "--cluster",
          `nats://127.0.0.1:${routes[i]}`,
          "--routes",
          routes.filter((_, j) => j !== i)
            .map((port) => `nats://127.0.0.1:${port}`).join(","),
        ]),
      );
    }
    try {
      await Promise.all(servers.map((s) => s.restart()));
    } catch (error) {
      await Promise.all(servers.map((s) => s.stop()));
      throw error;
    }
    return servers;
  }

  /** Starts a server on a free port and a new store; ready when it returns. */
  static async start(): Promise<NatsServer> {
    return await onFreshPorts(async () => {
      const storeDir = await Deno.makeTempDir({ prefix: "bakery-nats-" });
      const server = new NatsServer(
        await freePort(),
        storeDir,
        await durableFlags(storeDir),
      );
      try {
        await server.restart();
      } catch (error) {
        await server.stop();
        throw error;
      }
      return server;
    });
  }

  /** Starts the server again on the same port and store; waits until ready. */
  async restart(): Promise<void> {
    if (this.#child) throw new Error("nats-server is still running");
    const child = new Deno.Command(NATS_SERVER!, {
      args: [
        ...this.flags,
        "-js",
        "-a",
        "127.0.0.1",
        "-p",
        String(this.port),
        "-sd",
        this.storeDir,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.#stderr = new Response(child.stderr).text();
    let exited = false;
    child.status.then(() => exited = true);
    const deadline = Date.now() + 20_000;
    let last = "";
    while (Date.now() < deadline) {
      if (exited) {
        throw new Error(`nats-server exited early: ${await this.#stderr}`);
      }
      try {
        const nc = await connect({ servers: this.url, timeout: 1000 });
        try {
          await (await jetstreamManager(nc)).getAccountInfo();
          return;
        } finally {
          await nc.close();
        }
      } catch (error) {
        last = (error as Error).message;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`nats-server on ${this.url} not ready in 20 s: ${last}`);
  }

  /** Sends `signal` and waits for the server to exit. */
  async kill(signal: Deno.Signal): Promise<void> {
    const child = this.#child;
    if (!child) return;
    try {
      child.kill(signal);
    } catch {
      // Exited already.
    }
    await child.status;
    await this.#stderr;
    this.#child = undefined;
  }

  /** Stops the server and removes its store. */
  async stop(): Promise<void> {
    await this.kill("SIGTERM");
    await Deno.remove(this.storeDir, { recursive: true }).catch(() => {});
    await Deno.remove(`${this.storeDir}.conf`).catch(() => {});
  }
}

/**
 * `start` again, on ports it picks afresh, when the servers it started
 * exited early: a port found free can be taken before nats-server binds it,
 * by any connection of a test file running beside this one.
 */
async function onFreshPorts<T>(start: () => Promise<T>, tries = 3): Promise<T> {
  for (let i = 1;; i++) {
    try {
      return await start();
    } catch (error) {
      const early = (error as Error).message.includes("exited early");
      if (!early || i >= tries) throw error;
    }
  }
}
