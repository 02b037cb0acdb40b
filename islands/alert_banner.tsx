/**
 * The alerts banner at the top of every console page, live: each alert
 * with its state (firing, recovering, resolved), a link to the page that
 * shows why, and Acknowledge. Twin of `GET /api/console/alert-board`.
 * A recovery is shown, not just a silence: an alert that stops firing
 * turns amber while its repair is in flight and green once resolved, and
 * stays until acknowledged or a few minutes have passed. Nothing is drawn
 * while there is nothing to show, but the island stays on the page and
 * listens, so an alert appears (and changes) without a reload.
 */
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { formatAge, formatWhen, serviceLabel } from "../format.ts";
import { useLive } from "./_live.ts";
import { sharedBoard } from "./_alert_board.ts";
import { failure, sendJson } from "./_console_api.ts";
import type { AlertBoard, AlertEpisode } from "./_console_types.ts";

/** Props: the board as the server found it while rendering the page. */
export interface AlertBannerProps {
  initial: AlertBoard;
}

function words(a: AlertEpisode): { text: string; href: string; link: string } {
  switch (a.kind) {
    case "outbox_age":
      return {
        text: `${serviceLabel(a.subject)}: the oldest ready outbox row is ${
          formatAge(a.value)
        } old (alert above ${formatAge(a.threshold)})`,
        href: "/console/outbox",
        link: "See the outbox",
      };
    case "dead_letters":
      return {
        text: `${serviceLabel(a.subject)}: ${a.value} dead ${
          a.value === 1 ? "letter" : "letters"
        } (alert from ${a.threshold})`,
        href: `/console/dead-letters?subscriber=${
          encodeURIComponent(a.subject)
        }`,
        link: "See the dead letters",
      };
    case "success_rate":
      return {
        text: `${serviceLabel(a.subject)}: ${
          Math.round(a.value * 100)
        }% of attempts succeeded in 15 minutes (alert under ${
          Math.round(a.threshold * 100)
        }%)`,
        href: "/console/receivers",
        link: "See the receivers",
      };
    case "no_live_worker":
      return {
        text: `${a.value} ${
          a.subject === "relay" ? "outbox rows wait" : "deliveries wait"
        } and no live worker runs ${
          a.subject === "relay" ? "a relay" : "consumers"
        }`,
        href: "/console/workers",
        link: "See the workers",
      };
    case "silent_worker":
      return {
        text: `worker ${a.subject} is silent (last beat ${
          formatAge(a.value)
        } ago) and still holds leases`,
        href: "/console/workers",
        link: "See the workers",
      };
  }
}

/** What each state says before the alert's words. */
const STATE_WORDS: Record<AlertEpisode["state"], string> = {
  firing: "Firing",
  recovering: "Recovering",
  resolved: "Resolved",
};

/** One line per alert, oldest first. */
export default function AlertBanner(props: AlertBannerProps) {
  const live = useLive("/api/console/alert-board", props.initial);
  const { alerts } = live.data.value;
  // The overview's Alerts tile reads the same board (islands/_alert_board.ts).
  useEffect(() => {
    sharedBoard.value = live.data.value;
  }, [live.data.value]);
  const busy = useSignal<number | null>(null);
  const error = useSignal("");
  const firing = alerts.filter((a) => a.state !== "resolved").length;
  const tone = alerts.some((a) => a.state === "firing")
    ? "bad"
    : firing > 0
    ? "warn"
    : "ok";

  async function acknowledge(id: number) {
    busy.value = id;
    error.value = "";
    const answer = await sendJson(
      "POST",
      `/api/console/alerts/${id}/acknowledge`,
      {},
    );
    if (!answer.ok) error.value = failure(answer);
    busy.value = null;
  }

  return (
    <div
      class="alert-banner-slot"
      data-testid="alert-banner"
      data-count={firing}
      aria-live="polite"
    >
      {alerts.length > 0 && (
        <div class={`alert-banner alert-banner-${tone}`} role="status">
          <strong>
            {firing === 0
              ? "No alert firing"
              : firing === 1
              ? "1 alert"
              : `${firing} alerts`}
          </strong>
          <ul>
            {alerts.map((a) => {
              const w = words(a);
              return (
                <li
                  key={a.id}
                  data-testid={`alert-${a.kind}-${a.subject}`}
                  data-state={a.state}
                >
                  <span class={`alert-state alert-state-${a.state}`}>
                    {STATE_WORDS[a.state]}
                  </span>{" "}
                  {w.text}, since {formatWhen(a.since)}
                  {a.resolvedAt && `, resolved ${formatWhen(a.resolvedAt)}`}.
                  {" "}
                  <a href={w.href}>{w.link}</a>
                  {a.acknowledgedBy
                    ? (
                      <span class="muted" data-testid="alert-acknowledged">
                        Acknowledged by {a.acknowledgedBy},{" "}
                        {formatWhen(a.acknowledgedAt)}.
                      </span>
                    )
                    : (
                      <>
                        {" "}
                        <button
                          type="button"
                          class="button small quiet"
                          disabled={busy.value === a.id}
                          onClick={() => acknowledge(a.id)}
                          data-testid={`acknowledge-${a.kind}-${a.subject}`}
                        >
                          Acknowledge
                        </button>
                      </>
                    )}
                </li>
              );
            })}
          </ul>
          {error.value && <p class="form-error">{error.value}</p>}
        </div>
      )}
    </div>
  );
}
