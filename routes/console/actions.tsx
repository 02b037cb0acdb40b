/**
 * `GET /console/actions`: the operator log, newest first, a page of 50 at a
 * time (`?before=` a page's `next`): who redrove,
 * refused or superseded dead letters, started or cancelled a bulk job,
 * paused or resumed a receiver, or released parked outbox rows, when, aimed
 * at what, and how many. Twin of
 * `GET /api/console/actions`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage } from "../_console_page.tsx";
import {
  actionsQuerySchema,
  listActions,
  type OperatorAction,
} from "../../services/console/actions.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import type { ConsoleRender } from "./_guard.ts";
import { formatWhen, serviceLabel } from "../../format.ts";

const VERB: Record<OperatorAction["action"], string> = {
  redrive: "Redrive",
  refuse: "Refuse",
  supersede: "Supersede",
  cancel: "Cancel a job",
  pause: "Pause",
  resume: "Resume",
  release: "Release parked rows",
  acknowledge: "Acknowledge an alert",
  fault: "Flip a fault switch",
};

/**
 * A target as a line: `ids: 3, 4 · reason: "…"`, a receiver or a service
 * by its label (`receiver: Kitchen`); an empty one (a release of every
 * parked row) as `all`.
 */
function targetText(action: OperatorAction): string {
  const { target, groupName } = action;
  if (Object.keys(target).length === 0) return "all";
  return Object.entries(target).map(([key, value]) =>
    key === "group" && groupName
      ? `group: ${
        serviceLabel(groupName.subscriber)
      }, ${groupName.eventType}, "${groupName.pattern}"`
      : key === "subscriber" && typeof value === "string"
      ? `receiver: ${serviceLabel(value)}`
      : key === "service" && typeof value === "string"
      ? `service: ${serviceLabel(value)}`
      : key === "group"
      ? `group ${value} (no longer seen)`
      : `${key}: ${
        Array.isArray(value)
          ? value.join(", ")
          : typeof value === "string"
          ? value
          : JSON.stringify(value)
      }`
  ).join(" · ");
}

/** Renders the log from the same read model as the twin. */
export function actionsPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const { before } = parseOr400(
      actionsQuerySchema.pick({ before: true }),
      { before: c.req.query("before") },
      "query",
    );
    const { items, next } = await listActions(sql, operator.sandboxId, {
      before,
    });
    return html(
      <ConsolePage
        title="Operator log"
        current="actions"
        operator={operator}
        lead="Every operator action in this sandbox, newest first: dead letters redriven, refused or superseded, bulk jobs started or cancelled, receivers paused or resumed, parked outbox rows released, alerts acknowledged, fault switches flipped. Each row was written with the action."
      >
        <section class="panel">
          {items.length === 0
            ? (
              <p class="muted" data-testid="actions-empty">
                {before
                  ? "Nothing older: this is the start of the log."
                  : "No operator has acted in this sandbox yet."}
              </p>
            )
            : (
              // A wide log scrolls in its own box on a phone, not the page.
              <div class="table-wrap" tabIndex={0}>
                <table class="table" data-testid="actions">
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Who</th>
                      <th scope="col">Action</th>
                      <th scope="col">On what</th>
                      <th scope="col">How many</th>
                    </tr>
                  </thead>
                  <tbody>
                    {items.map((a, i) => (
                      <tr key={i} data-testid={`action-${a.action}`}>
                        <td>
                          <time dateTime={a.at}>{formatWhen(a.at)}</time>
                        </td>
                        <td>{a.actor}</td>
                        <td>
                          {VERB[a.action]}
                          {a.jobId && (
                            <>
                              {" "}
                              (<a href={`/api/console/jobs/${a.jobId}`}>job</a>)
                            </>
                          )}
                        </td>
                        <td
                          class="error-text"
                          title={typeof a.target.group === "string"
                            ? `Group key ${a.target.group}`
                            : undefined}
                        >
                          {targetText(a)}
                        </td>
                        <td>{a.count}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          {(before || next) && (
            <nav class="pager" aria-label="Pages of the log">
              {before && (
                <a href="/console/actions" data-testid="actions-newest">
                  ← Newest
                </a>
              )}
              {next && (
                <a
                  class="pager-older"
                  href={`/console/actions?before=${encodeURIComponent(next)}`}
                  data-testid="actions-older"
                >
                  Older entries →
                </a>
              )}
            </nav>
          )}
        </section>
      </ConsolePage>,
    );
  };
}
