/**
 * The drill's own nats-servers, from PATH: one, or three as one cluster
 * (`--cluster`, for NATS_REPLICAS=3), each with JetStream on, on loopback,
 * on free ports, with a store directory of its own. A node can be killed,
 * have its store wiped, and be started again on the same port.
 */
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../kit/postgres/embedded.ts";

/** The nats-server on PATH, or null. */
export async function findNatsServer(): Promise<string | null> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    const path = `${dir}/nats-server`;
    const info = await Deno.stat(path).catch(() => null);
    if (info?.isFile) return path;
  }
  return null;
}

/** One node: its client port, store and flags; running or not. */
class Node {
  child: Deno.ChildProcess | undefined;
  constructor(
    readonly binary: string,
    readonly port: number,
    readonly storeDir: string,
    readonly flags: string[],
  ) {}

  get url() {
    return `nats://127.0.0.1:${this.port}`;
  }

  start() {
    this.child = new Deno.Command(this.binary, {
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
      stderr: "null",
    }).spawn();
  }

  async kill(signal: Deno.Signal = "SIGKILL") {
    const child = this.child;
    if (!child) return;
    try {
      child.kill(signal);
    } catch {
      // Exited already.
    }
    await child.status;
    this.child = undefined;
  }
}

export class NatsNodes {
  private constructor(readonly nodes: Node[]) {}

  /** The URL list the bakery's NATS_URL takes. */
  get url(): string {
    return this.nodes.map((n) => n.url).join(",");
  }

  /** Starts `size` nodes (one cluster when more than one); ready on return. */
  static async start(binary: string, size: number): Promise<NatsNodes> {
    const routes: number[] = [];
    for (let i = 0; i < size; i++) routes.push(await freePort());
    const nodes: Node[] = [];
    for (let i = 0; i < size; i++) {
      const storeDir = await Deno.makeTempDir({ prefix: "bakery-drill-nats-" });
      const cluster = size > 1
        ? [
          "--name",
          `n${i}`,
          "--cluster_name",
          "bakery_drill",
          "--cluster",
          `nats://127.0.0.1:${routes[i]}`,
          "--routes",
          routes.filter((_, j) => j !== i)
            .map((p) => `nats://127.0.0.1:${p}`).join(","),
        ]
        : [];
      nodes.push(new Node(binary, await freePort(), storeDir, cluster));
    }
    const all = new NatsNodes(nodes);
    for (const node of nodes) node.start();
    await all.ready();
    return all;
  }

  /** Waits until JetStream answers on every running node (20 s at most). */
  async ready(ms = 20_000): Promise<void> {
    for (const node of this.nodes.filter((n) => n.child)) {
      const deadline = Date.now() + ms;
      for (;;) {
        try {
          const nc = await connect({ servers: node.url, timeout: 1000 });
          try {
            await (await jetstreamManager(nc)).getAccountInfo();
            break;
          } finally {
            await nc.close();
          }
        } catch (error) {
          if (Date.now() > deadline) {
            throw new Error(
              `nats-server on ${node.url} not ready: ${
                (error as Error).message
              }`,
            );
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  }

  /** Kills node `i` (SIGKILL); with `wipe`, removes its store too. */
  async kill(i: number, wipe = false): Promise<void> {
    const node = this.nodes[i % this.nodes.length];
    await node.kill("SIGKILL");
    if (wipe) {
      await Deno.remove(node.storeDir, { recursive: true }).catch(() => {});
      await Deno.mkdir(node.storeDir, { recursive: true });
    }
  }

  /** Starts node `i` again on its port and store. */
  async restart(i: number): Promise<void> {
    const node = this.nodes[i % this.nodes.length];
    if (!node.child) node.start();
    await this.ready();
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) {
      await node.kill("SIGTERM");
      await Deno.remove(node.storeDir, { recursive: true }).catch(() => {});
    }
  }
}
