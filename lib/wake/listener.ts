/**
 * A dedicated LISTEN connection that survives its own death. When the
 * connection closes (server restart, pg_terminate_backend, network), it
 * reconnects with exponential backoff and jitter and listens again, then
 * calls `onReconnect` so that the owner catches up on what it may have missed
 * meanwhile. NOTIFY is only a hint: the loops also poll.
 */
import postgres from "postgres";
import type { Logger } from "../log/mod.ts";

export interface ListenerOptions {
  url: string;
  channels: string[];
  onNotify: (channel: string, payload: string) => void;
  /** Called after every successful (re)connection, the first one included. */
  onReconnect?: () => void;
  log: Logger;
  /** First reconnect delay; doubles up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export class Listener {
  #options: ListenerOptions;
  #conn: postgres.Sql | undefined;
  #stopped = false;
  #failures = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #endSleep: (() => void) | undefined;
  #connecting: Promise<void> | undefined;

  constructor(options: ListenerOptions) {
    this.#options = options;
  }

  /** Connects and listens; resolves once listening (retries until then). */
  start(): Promise<void> {
    return this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    // Ends a backoff in progress; the connect loop then sees it is stopped.
    // (Only clearing its timer would leave that loop waiting forever.)
    this.#endSleep?.();
    await this.#connecting?.catch(() => {});
    const conn = this.#conn;
    this.#conn = undefined;
    await conn?.end({ timeout: 1 });
  }

  #connect(): Promise<void> {
    return this.#connecting = (async () => {
      while (!this.#stopped) {
        const conn = postgres(this.#options.url, {
          max: 1,
          idle_timeout: 0,
          max_lifetime: 0,
          fetch_types: false,
          onnotice: () => {},
          connection: { application_name: "outbox-listener" },
          // postgres.js passes these through to the connection; they are not
          // in its types.
          ...{
            onnotify: (channel: string, payload: string) =>
              this.#options.onNotify(channel, payload),
            onclose: () => this.#closed(conn),
          },
        });
        try {
          for (const channel of this.#options.channels) {
            await conn`listen ${conn(channel)}`;
          }
          this.#conn = conn;
          if (this.#failures > 0) {
            this.#options.log.info("listener_reconnected", {
              failures: this.#failures,
            });
          }
          this.#failures = 0;
          this.#options.onReconnect?.();
          return;
        } catch (error) {
          conn.end({ timeout: 0 }).catch(() => {});
          this.#failures++;
          this.#options.log.warn("listener_connect_failed", {
            error,
            failures: this.#failures,
          });
          await this.#sleep(this.#delay());
        }
      }
    })();
  }

  #closed(conn: postgres.Sql) {
    if (this.#stopped || conn !== this.#conn) return;
    this.#conn = undefined;
    conn.end({ timeout: 0 }).catch(() => {});
    this.#failures++;
    this.#options.log.warn("listener_lost", { failures: this.#failures });
    this.#sleep(this.#delay()).then(() => {
      if (!this.#stopped) this.#connect();
    });
  }

  /** Exponential backoff with full jitter in [d/2, d]. */
  #delay(): number {
    const base = this.#options.backoffMs ?? 100;
    const max = this.#options.maxBackoffMs ?? 10_000;
    const d = Math.min(max, base * 2 ** Math.min(this.#failures - 1, 16));
    return d / 2 + Math.random() * d / 2;
  }

  #sleep(ms: number) {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(this.#timer);
        this.#endSleep = undefined;
        resolve();
      };
      this.#timer = setTimeout(done, ms);
      this.#endSleep = done;
    });
  }
}
