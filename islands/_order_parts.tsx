/**
 * The pieces of the order page that the `order_timeline` island draws and
 * redraws: badges, the receipt, and the timeline of messages with one row
 * per receiver. Plain components of their props; the island holds the state.
 */
import type { OrderView } from "../services/timeline.ts";
import { formatEuros } from "../format.ts";
import { clock, span } from "./_time.ts";
import {
  type BadgeSpec,
  deliveryBadge,
  describeOutcome,
  doneCount,
  EVENT_TITLES,
  outboxBadge,
  type ReceiverRow,
  type TimelineEntry,
} from "./_timeline.ts";

/** A coloured pill; `state` goes in `data-state` for tests and styles. */
export function Badge(
  { spec, state, testId }: { spec: BadgeSpec; state?: string; testId?: string },
) {
  return (
    <span
      class={`badge badge-${spec.tone}`}
      data-state={state}
      data-testid={testId}
    >
      {spec.label}
    </span>
  );
}

/** The receipt, once the receipts service has written it. */
export function Receipt({ view, local }: { view: OrderView; local: boolean }) {
  const receipt = view.receipt;
  if (!receipt) return null;
  return (
    <section class="receipt" aria-labelledby="receipt-title">
      <header class="receipt-head">
        <h2 id="receipt-title">Receipt</h2>
        <span class="receipt-number" data-testid="receipt-number">
          {receipt.number}
        </span>
      </header>
      <table class="receipt-lines">
        <tbody>
          {view.lines.map((line) => (
            <tr key={line.sku}>
              <td>{line.qty} ×</td>
              <td>{line.name}</td>
              <td class="num">{formatEuros(line.qty * line.unitCents)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th colSpan={2}>Total paid</th>
            <td class="num" data-testid="receipt-total">
              {formatEuros(receipt.totalCents)}
            </td>
          </tr>
        </tfoot>
      </table>
      <p class="receipt-foot">
        Payment reference <code>{receipt.paymentRef}</code>
        <span>
          Issued{" "}
          <time dateTime={receipt.issuedAt}>
            {clock(receipt.issuedAt, local)}
          </time>
        </span>
      </p>
    </section>
  );
}

/** Every message of the order, oldest first, with what became of it. */
export function Timeline(
  { entries, labels, local }: {
    entries: TimelineEntry[];
    labels: Readonly<Record<string, string>>;
    local: boolean;
  },
) {
  const start = entries[0]?.at;
  return (
    <ol class="timeline">
      {entries.map((entry) => (
        <Entry
          key={entry.key}
          entry={entry}
          labels={labels}
          local={local}
          start={start ?? entry.at}
        />
      ))}
    </ol>
  );
}

function Entry(
  { entry, labels, local, start }: {
    entry: TimelineEntry;
    labels: Readonly<Record<string, string>>;
    local: boolean;
    start: string;
  },
) {
  const { message } = entry;
  const count = doneCount(entry);
  // The dot on the line takes the colour of the worst thing in the entry.
  const tone = entry.receivers.some((r) => r.delivery?.state === "dead") ||
      (message?.attempts ?? 0) > 0 && message?.state !== "published"
    ? "bad"
    : count.done === count.of && message?.state !== "pending"
    ? "ok"
    : "info";
  const name = (service: string) => labels[service] ?? service;
  return (
    <li class={`tl-entry tl-${tone}`} data-event-type={entry.type}>
      <div class="tl-card">
        <header class="tl-head">
          <h3>{EVENT_TITLES[entry.type] ?? entry.type}</h3>
          <span class="tl-time">
            <time dateTime={entry.at}>{clock(entry.at, local)}</time>
            {entry.at !== start && (
              <span class="muted">+{span(start, entry.at)}</span>
            )}
          </span>
        </header>
        <p class="tl-meta">
          <code>{entry.type}</code>
          {entry.events.map((event) => (
            <span class="tl-chip" key={`${event.type}-${event.version}`}>
              {event.type === entry.type
                ? `order v${event.version}`
                : `${event.type}, order v${event.version}`}
            </span>
          ))}
          {message && (
            <>
              <span>from {name(message.service)}</span>
              <Badge spec={outboxBadge(message)} state={message.state} />
              {message.publishedAt && (
                <span class="muted">
                  after {span(message.createdAt, message.publishedAt)}
                </span>
              )}
              {message.traceId && (
                <span class="muted" data-testid="trace-id">
                  trace <code>{message.traceId}</code>
                </span>
              )}
            </>
          )}
          {entry.receivers.length > 0 && (
            <span class="tl-count">{count.done}/{count.of} done</span>
          )}
        </p>
        {message?.lastError && message.state !== "published" && (
          <p class="tl-error">
            Publishing failed {message.attempts}{" "}
            {message.attempts === 1 ? "time" : "times"}: {message.lastError}
          </p>
        )}
        {!message && (
          <p class="tl-note muted">Recorded by the order; no message sent.</p>
        )}
        {entry.receivers.length > 0 && (
          <ul class="receivers">
            {entry.receivers.map((row) => (
              <Receiver
                key={row.subscriber}
                row={row}
                label={name(row.subscriber)}
                sentAt={message?.createdAt ?? entry.at}
                local={local}
              />
            ))}
          </ul>
        )}
      </div>
    </li>
  );
}

function Receiver(
  { row, label, sentAt, local }: {
    row: ReceiverRow;
    label: string;
    sentAt: string;
    local: boolean;
  },
) {
  const d = row.delivery;
  const accepted = d?.accepted;
  const outcome = describeOutcome(accepted?.outcome);
  return (
    <li
      class="receiver"
      data-subscriber={row.subscriber}
      data-state={d?.state ?? "owed"}
    >
      <span class="receiver-name">{label}</span>
      <Badge spec={deliveryBadge(d)} />
      <span class="receiver-attempts">
        {d && d.attempts > 0
          ? `${d.attempts} ${d.attempts === 1 ? "attempt" : "attempts"}`
          : "no attempt yet"}
      </span>
      <span class="receiver-inbox">
        {accepted
          ? (
            <>
              <span class={accepted.status < 300 ? "inbox-yes" : "inbox-no"}>
                {accepted.status < 300
                  ? "✓ accepted"
                  : `answered ${accepted.status}`}
              </span>{" "}
              <span class="muted">in {span(sentAt, accepted.at)}</span>
              {outcome && <code class="outcome">{outcome}</code>}
            </>
          )
          : d?.state === "done"
          // Acknowledged without an inbox row: the console's mismatch alarm.
          ? <span class="inbox-no">done, but not in its inbox</span>
          : <span class="muted">not in its inbox yet</span>}
      </span>
      {d?.lastError && d.state !== "done" && (
        <span class="receiver-error">
          {d.lastError}
          {d.nextAttemptAt && ` · next try ${clock(d.nextAttemptAt, local)}`}
        </span>
      )}
    </li>
  );
}
