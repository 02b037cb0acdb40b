/**
 * `GET /console/dead-letters?subscriber=&eventType=&window=`: dead letters,
 * oldest first, filtered by receiver, event type and time window (a GET form,
 * so a filter is a link that can be shared). It opens on the failure
 * groups (twin: `GET /api/console/failure-groups`) and the sandbox's bulk
 * jobs. Twin of `GET /api/console/dead-letters`; the actions are the
 * islands'.
 */
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import { ConsolePage } from "../_console_page.tsx";
import { formatWhen, serviceLabel } from "../../format.ts";
import { Island } from "../../islands/_registry.ts";
import { listDeliveries } from "../../services/console/deliveries.ts";
import { listJobs } from "../../services/console/jobs.ts";
import { failureGroupsData } from "../../services/console/failure_groups.ts";
import { SUBSCRIBERS } from "../../services/routing.ts";
import { payloads } from "../../services/events.ts";
import { deadLetterQuery } from "../api/console.ts";
import type { ConsoleRender } from "./_guard.ts";

/** Time windows people pick from, in ms: "died in the last ...". */
const WINDOWS = {
  "15m": ["15 minutes", 15 * 60_000],
  "1h": ["hour", 3600_000],
  "6h": ["6 hours", 6 * 3600_000],
  "24h": ["24 hours", 24 * 3600_000],
  "7d": ["7 days", 7 * 24 * 3600_000],
} as const;
type WindowKey = keyof typeof WINDOWS;

const query = deadLetterQuery.extend({
  window: z.enum(Object.keys(WINDOWS) as [WindowKey, ...WindowKey[]])
    .optional(),
});

// An empty select ("Any receiver") sends `subscriber=`: that is no filter.
const filled = (q: Record<string, string>) =>
  Object.fromEntries(Object.entries(q).filter(([, v]) => v !== ""));

/** Renders the filter form and the dead letter table. */
export function deadLettersPage({ sql, config }: Deps): ConsoleRender {
  return async (c, operator) => {
    const q = parseOr400(query, filled(c.req.query()), "query");
    const since = q.since ??
      (q.window ? new Date(Date.now() - WINDOWS[q.window][1]) : undefined);
    const filter = {
      subscriber: q.subscriber,
      eventType: q.eventType,
      group: q.group,
      since: since?.toISOString(),
      until: q.until?.toISOString(),
    };
    const [items, groups, jobs] = await Promise.all([
      listDeliveries(sql, operator.sandboxId, {
        ...q,
        since,
        state: "dead",
        horizonDays: config.REPLAY_HORIZON_DAYS,
      }),
      failureGroupsData(sql, operator.sandboxId),
      listJobs(sql, operator.sandboxId),
    ]);
    return html(
      <ConsolePage
        title="Dead letters"
        current="dead-letters"
        operator={operator}
        lead="Deliveries that ran out of retries or were refused by their receiver. Redrive sends the same message id again; refuse closes it with a reason."
      >
        <Island name="failure_groups" props={{ initial: groups, jobs }} />
        <h2>Dead letters</h2>
        <form
          method="get"
          action="/console/dead-letters"
          class="filters"
          data-testid="dead-letter-filters"
        >
          <label>
            Receiver
            <select name="subscriber" data-testid="filter-subscriber">
              <option value="">Any receiver</option>
              {SUBSCRIBERS.map((s) => (
                <option key={s} value={s} selected={s === q.subscriber}>
                  {serviceLabel(s)}
                </option>
              ))}
            </select>
          </label>
          <label>
            Event type
            <select name="eventType" data-testid="filter-event-type">
              <option value="">Any event type</option>
              {Object.keys(payloads).map((t) => (
                <option key={t} value={t} selected={t === q.eventType}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          <label>
            Died
            <select name="window" data-testid="filter-window">
              <option value="">at any time</option>
              {Object.entries(WINDOWS).map(([key, [words]]) => (
                <option key={key} value={key} selected={key === q.window}>
                  in the last {words}
                </option>
              ))}
            </select>
          </label>
          {q.group && <input type="hidden" name="group" value={q.group} />}
          {q.since && (
            <input type="hidden" name="since" value={q.since.toISOString()} />
          )}
          {q.until && (
            <input type="hidden" name="until" value={q.until.toISOString()} />
          )}
          <button type="submit" class="button small" data-testid="filter-apply">
            Filter
          </button>
          {Object.keys(filled(c.req.query())).length > 0 && (
            <a href="/console/dead-letters" data-testid="filter-clear">
              Clear
            </a>
          )}
        </form>
        {(q.since || q.until) && (
          <p class="muted">
            Died {q.since && `from ${formatWhen(q.since.toISOString())}`}
            {q.until && ` before ${formatWhen(q.until.toISOString())}`}.
          </p>
        )}
        <Island name="dead_letters" props={{ filter, initial: { items } }} />
      </ConsolePage>,
    );
  };
}
