/**
 * The bakery's retention: every hour, finished work older than the replay
 * horizon plus a margin (RETENTION_MARGIN_DAYS) is removed from the queue
 * and the receivers' inboxes (lib/ledger/retention.ts says what goes and
 * what stays). The margin covers a message that sat in an outbox or a
 * retry for a while: what counts for the horizon is when the message was
 * made, and that is older than when it was finished.
 */
import type { Config } from "../config.ts";
import type { Sql } from "../lib/db/connect.ts";
import type { Logger } from "../lib/log/mod.ts";
import { isRouted, poolOf } from "../lib/db/service.ts";
import {
  owedIn,
  type Pruned,
  pruneHistory,
  pruneInboxes,
  pruneQueue,
} from "../lib/ledger/retention.ts";
import { queuePools } from "./databases.ts";
import type { Retention } from "./console/contracts.ts";
import { every } from "./every.ts";
import { SUBSCRIBERS } from "./routing.ts";

const DAY_MS = 86_400_000;

/** What the console says is kept, and for how long. */
export function retentionSettings(config: Config): Retention {
  return {
    on: config.RETENTION === "on",
    replayHorizonDays: config.REPLAY_HORIZON_DAYS,
    marginDays: config.RETENTION_MARGIN_DAYS,
    keptDays: config.REPLAY_HORIZON_DAYS + config.RETENTION_MARGIN_DAYS,
  };
}

/** One pass: removes what finished more than the kept days before `now`. */
export async function pruneOld(
  sql: Sql,
  config: Config,
  now = new Date(),
): Promise<Pruned> {
  const { keptDays } = retentionSettings(config);
  const before = new Date(now.getTime() - keptDays * DAY_MS);
  if (!isRouted(sql)) {
    return await pruneHistory(sql, { before, subscribers: SUBSCRIBERS });
  }
  // Split mode: each queue in its sender's database, each inbox in its
  // receiver's, which asks the queues what is still owed.
  const queues = queuePools(sql);
  const pruned: Pruned = {
    deliveries: 0,
    attempts: 0,
    messages: 0,
    inboxes: {},
  };
  for (const pool of queues) {
    const part = await pruneQueue(pool, { before });
    pruned.deliveries += part.deliveries;
    pruned.attempts += part.attempts;
    pruned.messages += part.messages;
  }
  const stillOwed = async (subscriber: string, ids: readonly string[]) => {
    const owed = new Set<string>();
    for (const pool of queues) {
      for (const id of await owedIn(pool, subscriber, ids)) owed.add(id);
    }
    return owed;
  };
  for (const subscriber of SUBSCRIBERS) {
    Object.assign(
      pruned.inboxes,
      await pruneInboxes(poolOf(sql, subscriber), {
        before,
        subscribers: [subscriber],
        stillOwed,
      }),
    );
  }
  return pruned;
}

/** Runs a pass a minute after the start, then every hour; returns a stop. */
export function scheduleRetention(
  sql: Sql,
  log: Logger,
  config: Config,
  options: { everyMs?: number } = {},
): () => Promise<void> {
  return every(
    () =>
      pruneOld(sql, config).then(
        (pruned) => log.info("retention_pass", { ...pruned }),
        (error) => log.warn("retention_failed", { error }),
      ),
    { everyMs: options.everyMs ?? 60 * 60_000, firstMs: 60_000 },
  );
}
