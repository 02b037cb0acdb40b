/**
 * A change feed for live views: workers say which tenants a batch changed
 * (one NOTIFY per batch, not per row), and every web process fans that out
 * to the pages open on those tenants. Like every notification, it is a
 * hint: a page that missed one catches up on the next.
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import { Listener } from "./listener.ts";

export const CHANGES_CHANNEL = "changes";

/** Tells every web process that these tenants changed. */
export async function notifyChanged(sql: Sql, tenantIds: string[]) {
  if (tenantIds.length === 0) return;
  // 100 ids of 36 characters stay far under NOTIFY's 8000-byte payload limit.
  for (let i = 0; i < tenantIds.length; i += 100) {
    await sql`select pg_notify(${CHANGES_CHANNEL}, ${
      tenantIds.slice(i, i + 100).join(",")
    })`;
  }
}

export type ChangeListener = () => void;

export class ChangeFeed {
  #listener: Listener;
  #subscribers = new Map<string, Set<ChangeListener>>();

  constructor(options: { url: string; log: Logger }) {
    this.#listener = new Listener({
      url: options.url,
      channels: [CHANGES_CHANNEL],
      log: options.log,
      onNotify: (_channel, payload) => {
        for (const id of payload.split(",")) this.#emit(id);
      },
      // After a reconnect, tell every open page to look again.
      onReconnect: () => {
        for (const id of this.#subscribers.keys()) this.#emit(id);
      },
    });
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }

  /** Calls `fn` whenever `tenantId` changes; returns the unsubscribe. */
  subscribe(tenantId: string, fn: ChangeListener): () => void {
    let set = this.#subscribers.get(tenantId);
    if (!set) this.#subscribers.set(tenantId, set = new Set());
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.#subscribers.delete(tenantId);
    };
  }

  /** Announces a change made in this process (a command, a fault switch). */
  emitLocal(tenantId: string) {
    this.#emit(tenantId);
  }

  #emit(tenantId: string) {
    for (const fn of this.#subscribers.get(tenantId) ?? []) fn();
  }
}
