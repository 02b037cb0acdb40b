/**
 * What both peers' drain scenarios share (peer.ts, peer_pgboss.ts): the
 * handler's tables and its one transaction, an inbox insert and an effect
 * upsert (the handler_plain baseline's two statements), and the count of
 * jobs handled that the drain waits on.
 */
import type { Sql } from "../lib/db/connect.ts";
import { Progress } from "./progress.ts";

/** Effect rows the handler upserts into, as handler_plain does. */
export const KEYS = 10_000;

/** The handler's tables, in the schema `bench` of the peer's database. */
export async function createHandlerTables(sql: Sql): Promise<void> {
  await sql`create schema bench`;
  await sql`create table bench.inbox (
    message_id uuid primary key,
    received_at timestamptz not null default now())`;
  await sql`create table bench.effects (
    key int primary key, n int not null, updated_at timestamptz not null)`;
}

/** A `pg` connection the peer lends its handler. */
interface PgClient {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** The handler's transaction on the peer's own connection. */
export async function applyJob(
  client: PgClient,
  job: { messageId: string; key: number },
): Promise<void> {
  await client.query("begin");
  try {
    await client.query(
      "insert into bench.inbox (message_id) values ($1)",
      [job.messageId],
    );
    await client.query(
      `insert into bench.effects (key, n, updated_at)
       values ($1, 1, now())
       on conflict (key) do update set n = bench.effects.n + 1,
         updated_at = now()`,
      [job.key],
    );
    await client.query("commit");
  } catch (error) {
    await client.query("rollback");
    throw error;
  }
}

/** Counts the jobs handled; `all` waits for every one of them. */
export class Handled {
  count = 0;
  /** When the last job was handled (performance.now()). */
  lastAt = 0;
  #allDone = () => {};
  readonly #done = new Promise<void>((r) => this.#allDone = r);

  constructor(readonly jobs: number) {}

  one(): void {
    this.count++;
    this.lastAt = performance.now();
    if (this.count === this.jobs) this.#allDone();
  }

  /** Waits for every job, showing progress; throws after `timeoutMs`. */
  async all(progress: Progress, timeoutMs: number): Promise<void> {
    const ticker = setInterval(
      () => progress.update(Progress.count(this.count, this.jobs)),
      250,
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        this.#done,
        new Promise<never>((_, reject) =>
          timer = setTimeout(
            () =>
              reject(
                new Error(`only ${this.count} of ${this.jobs} jobs handled`),
              ),
            timeoutMs,
          )
        ),
      ]);
    } finally {
      clearTimeout(timer);
      clearInterval(ticker);
    }
  }
}
