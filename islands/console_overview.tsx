/**
 * The console's overview, live. It opens on what needs an operator, one
 * tile each: dead letters, deliveries retrying, parked outbox rows, silent
 * workers and alerts firing (Sidekiq's and River UI's dashboards fit such
 * figures on one screen); then the outboxes' own figures, the dead letters
 * per receiver beside the closure totals, and each receiver's health.
 * Below: the outbox per service and event type, the age histogram beside
 * the order violations, payments needing a refund, checkout events not yet
 * taken, and each receiver's last hour as charts. Twin of
 * `GET /api/console/overview`; ages count up every second.
 */
import { AgeHistogram } from "./_age_histogram.tsx";
import { ClosureTotals, MismatchAlarm } from "./_closure_totals.tsx";
import { RateBar } from "./_rate_bar.tsx";
import { Tile } from "./_tile.tsx";
import { RefundsDue } from "./_refunds_due.tsx";
import { CheckoutEventsList } from "./_checkout_events.tsx";
import { ReceiverChartGrid } from "./_receiver_charts.tsx";
import { formatAge, formatWhen, serviceLabel } from "../format.ts";
import { useSignal } from "@preact/signals";
import { liveAge, useLive, useNow } from "./_live.ts";
import { failure, sendJson } from "./_console_api.ts";
import { alertCounts, sharedBoard } from "./_alert_board.ts";
import type { AlertBoard, OverviewData } from "./_console_types.ts";

/**
 * Props: the server's render of the twin, when it measured the ages, and
 * the alert board the page's banner started from.
 */
export interface ConsoleOverviewProps {
  initial: OverviewData;
  serverNow: string;
  board: AlertBoard;
}

/** Everything an operator looks at first. */
export default function ConsoleOverview(props: ConsoleOverviewProps) {
  const live = useLive("/api/console/overview", props.initial, props.serverNow);
  const now = useNow();
  const {
    outbox,
    closure,
    deadLetters,
    receivers,
    refunds,
    checkoutEvents,
    lastHour,
    orderViolations,
    republished,
    retryingDeliveries,
    workers,
  } = live.data.value;
  const sending = useSignal<ReadonlySet<string>>(new Set());
  const sendError = useSignal("");
  async function sendAgain(eventId: string) {
    sending.value = new Set([...sending.value, eventId]);
    sendError.value = "";
    const answer = await sendJson(
      "POST",
      `/api/console/checkout-events/${encodeURIComponent(eventId)}/send-again`,
      {},
    );
    if (!answer.ok) sendError.value = failure(answer);
    const rest = new Set(sending.value);
    rest.delete(eventId);
    sending.value = rest;
  }
  const age = (s: number | null) =>
    formatAge(liveAge(s, live.stamp.value, now));
  const deadTotal = deadLetters.reduce((n, d) => n + d.count, 0);
  // The banner keeps the board live; until it has hydrated, the server's.
  const alerts = alertCounts(sharedBoard.value ?? props.board);
  return (
    <div class="overview">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <MismatchAlarm mismatch={closure.totals.mismatch} />
      {/* What needs an operator first, in one row on a laptop's screen. */}
      <ul
        class="tiles action-tiles"
        data-testid="action-stats"
        aria-label="Needs action"
      >
        <Tile
          label="Dead letters"
          value={deadTotal}
          id="dead"
          tone={deadTotal > 0 ? "bad" : undefined}
          href="/console/dead-letters"
          detail={deadLetters.length === 1
            ? `at ${serviceLabel(deadLetters[0].subscriber)}`
            : deadLetters.length > 1
            ? `at ${deadLetters.length} receivers`
            : undefined}
        />
        <Tile
          label="Deliveries retrying"
          value={retryingDeliveries.count}
          id="retrying-deliveries"
          tone={retryingDeliveries.count > 0 ? "warn" : undefined}
          href="/console/deliveries?state=retrying"
          detail={retryingDeliveries.nextAttemptAt
            ? `next ${formatWhen(retryingDeliveries.nextAttemptAt)}`
            : undefined}
        />
        <Tile
          label="Parked outbox rows"
          value={outbox.parked}
          id="parked"
          tone={outbox.parked > 0 ? "warn" : undefined}
          href="/console/outbox"
          detail={outbox.parked > 0 ? "wait for a release" : undefined}
        />
        <Tile
          label="Silent workers"
          value={workers.silent}
          id="silent-workers"
          tone={workers.silent > 0 ? "warn" : undefined}
          href="/console/workers"
          detail={`${workers.live} live`}
        />
        <Tile
          label="Alerts firing"
          value={alerts.firing}
          id="alerts"
          tone={alerts.firing > 0
            ? "bad"
            : alerts.recovering > 0
            ? "warn"
            : undefined}
          detail={alerts.recovering > 0
            ? `${alerts.recovering} recovering`
            : undefined}
        />
      </ul>
      <h2 class="tiles-title" id="outbox-stats-title">
        The senders' outboxes
      </h2>
      <ul
        class="tiles"
        data-testid="outbox-stats"
        aria-labelledby="outbox-stats-title"
      >
        <Tile label="Outbox pending" value={outbox.pending} id="pending" />
        <Tile label="Outbox ready now" value={outbox.ready} id="ready" />
        <Tile
          label="Outbox waiting for retry"
          value={outbox.backingOff}
          id="backing-off"
        />
        <Tile
          label="Oldest ready row"
          value={age(outbox.oldestReadyAgeSeconds)}
          id="oldest-ready-age"
          tone={(outbox.oldestReadyAgeSeconds ?? 0) > 60 ? "warn" : undefined}
        />
        <Tile
          label="Oldest pending row"
          value={age(outbox.oldestAgeSeconds)}
          id="oldest-age"
        />
      </ul>

      <div class="columns">
        <section class="panel" aria-labelledby="dead-title">
          <h2 id="dead-title">Dead letters by receiver</h2>
          {deadLetters.length === 0
            ? (
              <p class="muted" data-testid="no-dead-letters">
                No dead letters.
              </p>
            )
            : (
              <div class="table-wrap" tabIndex={0}>
                <table class="table" data-testid="dead-by-receiver">
                  <thead>
                    <tr>
                      <th>Receiver</th>
                      <th class="num">Dead</th>
                      <th>Oldest since</th>
                    </tr>
                  </thead>
                  <tbody>
                    {deadLetters.map((d) => (
                      <tr
                        key={d.subscriber}
                        data-testid={`dead-receiver-${d.subscriber}`}
                      >
                        <td>
                          <a
                            href={`/console/dead-letters?subscriber=${
                              encodeURIComponent(d.subscriber)
                            }`}
                          >
                            {serviceLabel(d.subscriber)}
                          </a>
                        </td>
                        <td class="num">
                          <span class="badge badge-bad">{d.count}</span>
                        </td>
                        <td class="nowrap">{formatWhen(d.oldestDeadAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </section>
        <section class="panel" aria-labelledby="closure-title">
          <h2 id="closure-title">Closure</h2>
          <p class="muted">
            Every obligation (message × receiver), from the sender's outbox to
            the receiver's inbox.
          </p>
          <ClosureTotals totals={closure.totals} />
        </section>
      </div>

      <section class="panel" aria-labelledby="health-title">
        <h2 id="health-title">Receiver health, last 15 minutes</h2>
        {receivers.length === 0
          ? <p class="muted">No deliveries in the last 15 minutes.</p>
          : (
            <div class="table-wrap" tabIndex={0}>
              <table class="table" data-testid="receiver-health">
                <thead>
                  <tr>
                    <th>Receiver</th>
                    <th class="num">Attempts</th>
                    <th>Success</th>
                    <th>Last error</th>
                  </tr>
                </thead>
                <tbody>
                  {receivers.map((r) => (
                    <tr
                      key={r.subscriber}
                      data-testid={`health-${r.subscriber}`}
                    >
                      <td>{serviceLabel(r.subscriber)}</td>
                      <td class="num">{r.attempts}</td>
                      <td>
                        <RateBar
                          rate={r.successRate}
                          label={serviceLabel(r.subscriber)}
                        />
                      </td>
                      <td class="error-text">{r.lastError ?? "–"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </section>

      <section class="panel" aria-labelledby="by-service-title">
        <h2 id="by-service-title">Outbox by service and event type</h2>
        {outbox.byService.length === 0
          ? <p class="muted">Nothing pending: every promise is published.</p>
          : (
            <div class="table-wrap" tabIndex={0}>
              <table class="table" data-testid="outbox-by-service">
                <thead>
                  <tr>
                    <th>Service</th>
                    <th>Event type</th>
                    <th class="num">Pending</th>
                    <th class="num">Ready</th>
                    <th class="num">Retrying</th>
                    <th class="num">Oldest ready</th>
                    <th class="num">Oldest</th>
                  </tr>
                </thead>
                <tbody>
                  {outbox.byService.map((g) => (
                    <tr
                      key={`${g.service}/${g.eventType}`}
                      data-testid={`outbox-group-${g.service}-${g.eventType}`}
                    >
                      <td>{serviceLabel(g.service)}</td>
                      <td>{g.eventType}</td>
                      <td class="num">{g.pending}</td>
                      <td class="num">{g.ready}</td>
                      <td class="num">{g.backingOff}</td>
                      <td class="num age">{age(g.oldestReadyAgeSeconds)}</td>
                      <td class="num age">{age(g.oldestAgeSeconds)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        <p class="more">
          <a href="/console/outbox">The oldest rows, with their errors</a>
        </p>
      </section>
      <div class="columns">
        <section class="panel" aria-labelledby="histogram-title">
          <h2 id="histogram-title">Age of pending messages</h2>
          <AgeHistogram buckets={outbox.buckets} />
        </section>
        <section class="panel" aria-labelledby="violations-title">
          <h2 id="violations-title">Order violations</h2>
          <p data-testid="overview-violations">
            <a
              href="/console/order-violations"
              data-testid="overview-violations-link"
              class={orderViolations.total > 0 ? "tone-warn" : undefined}
            >
              {orderViolations.total === 1
                ? "1 message"
                : `${orderViolations.total} messages`}{" "}
              arrived after a later version of their order had been applied
            </a>
          </p>
          <p data-testid="overview-republished">
            <span class={republished.deliveries > 0 ? "tone-warn" : undefined}>
              {republished.deliveries === 1
                ? "1 delivery"
                : `${republished.deliveries} deliveries`}
            </span>{" "}
            the broker lost were sent again from the ledger
            {republished.copies > republished.deliveries
              ? ` (${republished.copies} copies)`
              : ""}
          </p>
        </section>
      </div>

      <section class="panel" aria-labelledby="refunds-title">
        <h2 id="refunds-title">Payments needing a refund</h2>
        <p class="muted">
          Money taken that no order keeps: a charge that is not the order's, a
          second payment of a paid order, a payment of a cancelled one.
        </p>
        <RefundsDue refunds={refunds} />
      </section>

      <section class="panel" aria-labelledby="checkout-events-title">
        <h2 id="checkout-events-title">Checkout events not yet taken</h2>
        <p class="muted">
          The test checkout posts each payment's Stripe event until the webhook
          answers, as Stripe does; after the last retry it gives up and waits
          here.
        </p>
        {sendError.value && (
          <p class="form-error" role="alert">{sendError.value}</p>
        )}
        <CheckoutEventsList
          events={checkoutEvents}
          onSendAgain={sendAgain}
          busy={sending.value}
        />
      </section>

      <section class="panel" aria-labelledby="last-hour-title">
        <h2 id="last-hour-title">Last hour per receiver</h2>
        <p class="muted">
          Done deliveries and p95 latency per minute.{" "}
          <a href="/console/receivers">Every receiver in detail</a>
        </p>
        <ReceiverChartGrid receivers={lastHour} />
      </section>
    </div>
  );
}
