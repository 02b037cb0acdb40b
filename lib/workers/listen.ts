/**
 * What wakes the loops of one process from outside it: one LISTEN
 * connection (a hint only; every loop also polls).
 *
 * - `NOTIFY outbox, '<service>'`: that service's relay looks.
 * - `NOTIFY queue`: one consumer looks (local_queue.ts: one wake-up per
 *   hint), and the broker's republisher of redrives; not when the payload
 *   names this process, whose move woke its own consumers already.
 * - `NOTIFY queue, 'resume'` (a subscriber resumed, lib/ledger/pauses.ts):
 *   the paused pairs are read again, then every consumer looks.
 * - a reconnect: every loop looks, since notifications sent meanwhile are
 *   lost.
 */
import type { Logger } from "../log/mod.ts";
import { OUTBOX_CHANNEL } from "../outbox/channel.ts";
import { QUEUE_CHANNEL } from "../ledger/channel.ts";
import { type PauseReader, RESUME_HINT } from "../ledger/pauses.ts";
import { Listener } from "../wake/listener.ts";
import type { Loop } from "../wake/loop.ts";
import type { LocalQueue } from "../delivery/local_queue.ts";

export interface WakeListenerOptions {
  /** For the dedicated LISTEN connection. */
  url: string;
  log: Logger;
  /** This process's lease owner, as a move's NOTIFY names it. */
  owner: string;
  relays: ReadonlyMap<string, Loop>;
  local: LocalQueue;
  /** Wakes the republisher of redrives (JetStream), if there is one. */
  wakeRepublisher?: () => void;
  /** The paused subscribers' cache, dropped when one is resumed. */
  pauses?: PauseReader;
}

/** The listener (not started) that wakes this process's loops. */
export function wakeListener(options: WakeListenerOptions): Listener {
  const { relays, local } = options;
  return new Listener({
    url: options.url,
    channels: [OUTBOX_CHANNEL, QUEUE_CHANNEL],
    log: options.log,
    onNotify: (channel, payload) => {
      if (channel === OUTBOX_CHANNEL) relays.get(payload)?.wake();
      else if (payload === RESUME_HINT) {
        // The consumers claim by the pairs last read: read them, then wake.
        options.pauses?.forget();
        const read = options.pauses?.() ?? Promise.resolve();
        read.then(() => local.wakeAll(), () => local.wakeAll());
      } else if (payload !== options.owner) {
        // A move's hint that names this process was answered here already.
        local.hint();
        options.wakeRepublisher?.();
      }
    },
    onReconnect: () => {
      relays.forEach((r) => r.wake());
      local.wakeAll();
    },
  });
}
