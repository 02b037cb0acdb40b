/**
 * The alerts banner at the top of every console page, live: what fires now
 * by the settings' thresholds, each with a link to the page that shows why.
 * Twin of `GET /api/console/alerts`. Nothing is drawn while nothing fires,
 * but the island stays on the page and listens, so an alert appears (and
 * clears) without a reload.
 */
import { formatAge, formatClock } from "../format.ts";
import { useLive } from "./_live.ts";
import type { Alert, AlertsData } from "./_console_types.ts";

/** Props: the alerts as the server found them while rendering the page. */
export interface AlertBannerProps {
  initial: AlertsData;
}

function words(a: Alert): { text: string; href: string; link: string } {
  switch (a.kind) {
    case "outbox_age":
      return {
        text: `${a.subject}: the oldest ready outbox row is ${
          formatAge(a.value)
        } old (alert above ${formatAge(a.threshold)})`,
        href: "/console/outbox",
        link: "See the outbox",
      };
    case "dead_letters":
      return {
        text: `${a.subject}: ${a.value} dead ${
          a.value === 1 ? "letter" : "letters"
        } (alert from ${a.threshold})`,
        href: `/console/dead-letters?subscriber=${
          encodeURIComponent(a.subject)
        }`,
        link: "See the dead letters",
      };
    case "success_rate":
      return {
        text: `${a.subject}: ${
          Math.round(a.value * 100)
        }% of attempts succeeded in 15 minutes (alert under ${
          Math.round(a.threshold * 100)
        }%)`,
        href: "/console/receivers",
        link: "See the receivers",
      };
  }
}

/** One line per alert, newest condition last. */
export default function AlertBanner(props: AlertBannerProps) {
  const live = useLive("/api/console/alerts", props.initial);
  const { alerts } = live.data.value;
  return (
    <div
      class="alert-banner-slot"
      data-testid="alert-banner"
      data-count={alerts.length}
      aria-live="polite"
    >
      {alerts.length > 0 && (
        <div class="alert-banner" role="alert">
          <strong>
            {alerts.length === 1 ? "1 alert" : `${alerts.length} alerts`}
          </strong>
          <ul>
            {alerts.map((a) => {
              const w = words(a);
              return (
                <li
                  key={`${a.kind}/${a.subject}`}
                  data-testid={`alert-${a.kind}-${a.subject}`}
                >
                  {w.text}, since {formatClock(a.since)}.{" "}
                  <a href={w.href}>{w.link}</a>
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </div>
  );
}
