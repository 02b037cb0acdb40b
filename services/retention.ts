/**
 * The bakery's retention: every hour, finished work older than the replay
 * horizon plus a margin (RETENTION_MARGIN_DAYS) is removed from the queue
 * and the receivers' inboxes (lib/queue/retention.ts says what goes and
 * what stays). The margin covers a message that sat in an outbox or a
 * retry for a while: what counts for the horizon is when the message was
 * made, and that is older than when it was finished.
 */
import type { Config } from "../config.ts";
import type { Sql } from "../lib/db/connect.ts";
import type { Logger } from "../lib/log/mod.ts";
import { type Pruned, pruneHistory } from "../lib/queue/retention.ts";
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
  return await pruneHistory(sql, {
    before: new Date(now.getTime() - keptDays * DAY_MS),
    subscribers: SUBSCRIBERS,
  });
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
