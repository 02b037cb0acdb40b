/**
 * The drill's own connections to the bakery's databases, for the progress
 * line and the checker: one small pool per service database in split mode
 * (named as services/databases.ts names them), or one pool for all. They
 * read the tables directly, never the app's API or its closure.
 */
import { connect, type Sql } from "../lib/db/connect.ts";
import { serviceDatabaseUrls } from "../services/databases.ts";

/** The outboxes of the two senders; the queues live beside them. */
export const SENDERS = ["orders", "billing"] as const;

export class Stores {
  #pools = new Map<string, Sql>();
  private constructor(
    readonly url: string,
    readonly split: boolean,
  ) {}

  static open(url: string, split: boolean): Stores {
    return new Stores(url, split);
  }

  /** The pool of `service`'s database (made on first use). */
  at(service: string): Sql {
    const key = this.split ? service : "main";
    let pool = this.#pools.get(key);
    if (!pool) {
      const url = this.split
        ? serviceDatabaseUrls(this.url).get(service)
        : this.url;
      if (!url) throw new Error(`no database for service ${service}`);
      // One connection each; a dead server's is replaced on the next query.
      pool = connect(url, { max: 1, applicationName: "bakery-drill" });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** The pools that hold a queue: one, or each sender's. */
  queues(): Sql[] {
    return this.split ? SENDERS.map((s) => this.at(s)) : [this.at("orders")];
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.#pools.values()].map((p) => p.end({ timeout: 2 })),
    );
    this.#pools.clear();
  }
}

/** What is still owed or open, at one moment. */
export interface Backlog {
  outbox: number;
  pending: number;
  inFlight: number;
  dead: number;
}

/** Reads the backlog from every outbox and queue. */
export async function readBacklog(stores: Stores): Promise<Backlog> {
  const backlog: Backlog = { outbox: 0, pending: 0, inFlight: 0, dead: 0 };
  for (const sender of SENDERS) {
    const sql = stores.at(sender);
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(`${sender}.outbox`)}`;
    backlog.outbox += row.n;
  }
  for (const sql of stores.queues()) {
    const rows = await sql<{ state: string; n: number }[]>`
      select state, count(*)::int as n from queue.deliveries
       where state in ('pending', 'in_flight', 'dead') group by state`;
    for (const { state, n } of rows) {
      if (state === "pending") backlog.pending += n;
      if (state === "in_flight") backlog.inFlight += n;
      if (state === "dead") backlog.dead += n;
    }
  }
  return backlog;
}
