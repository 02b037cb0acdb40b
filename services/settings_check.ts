/**
 * What the settings promise, checked at start against the database and the
 * broker they name (config.ts has already refused what the settings alone
 * break, promises.ts). Called by bakery.ts and workers/main.ts
 * before anything of theirs opens:
 *
 * - NATS_REPLICAS larger than the NATS cluster: the stream could never
 *   keep that many copies, and the loss of one server would lose what the
 *   setting says survives it. Refused.
 * - fsync off in PostgreSQL: a commit the bakery acknowledged (an order,
 *   an outbox row, an inbox row) can vanish in a power cut. Warned, not
 *   refused: a throwaway database (the test suite's own) runs so on
 *   purpose.
 */
import { connect } from "@nats-io/transport-node";
import type { Config } from "../config.ts";
import type { Sql } from "../lib/db/connect.ts";
import type { Logger } from "../lib/log/mod.ts";
import { natsServers } from "../lib/carriers/jetstream/mod.ts";
import { BrokenPromise } from "../promises.ts";

export { BrokenPromise } from "../promises.ts";

/**
 * The servers of the NATS cluster at `url`, as the server a client reaches
 * announces them: 1 for a server on its own; otherwise the client URLs it
 * gossips, and its own.
 */
export async function natsClusterSize(url: string): Promise<number> {
  const nc = await connect({
    servers: natsServers(url),
    name: "outbox-settings-check",
    maxReconnectAttempts: 0,
  });
  try {
    const info = nc.info;
    if (!info?.cluster) return 1;
    // Counted generously: where the connected server writes itself
    // another way than it gossips, it counts twice, and a refusal is
    // missed rather than made wrongly (the stream's own error remains).
    return new Set([...info.connect_urls ?? [], nc.getServer()]).size;
  } finally {
    await nc.close();
  }
}

/**
 * Refuses (throws {@link BrokenPromise}) a setting that the database or the
 * broker cannot keep; warns of fsync off.
 */
export async function checkSettings(
  config: Config,
  sql: Sql,
  log: Logger,
): Promise<void> {
  if (config.QUEUE === "jetstream" && config.NATS_REPLICAS > 1) {
    const size = await natsClusterSize(config.NATS_URL);
    if (config.NATS_REPLICAS > size) {
      throw new BrokenPromise(
        "NATS_REPLICAS",
        `NATS_REPLICAS (${config.NATS_REPLICAS}) is larger than the NATS cluster at NATS_URL (${size} ${
          size === 1 ? "server" : "servers"
        }): the stream cannot keep that many copies, so losing a server would lose messages the setting says survive it`,
      );
    }
  }
  const [{ fsync }] = await sql<{ fsync: string }[]>`
    select current_setting('fsync') as fsync`;
  if (fsync === "off") {
    log.warn("database_fsync_off", {
      message:
        "PostgreSQL runs with fsync off: a commit the bakery acknowledged (an order, an outbox or inbox row) can be lost in a crash of the machine; fine for a throwaway database, never for real orders",
    });
  }
}
