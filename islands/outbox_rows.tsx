/**
 * The oldest pending outbox rows, live: rows that are ready now, apart from
 * them the rows that wait for a scheduled retry (with the countdown to the
 * next attempt), and apart again the rows parked by the loop guard, which
 * an operator may release (islands/_parked_rows.tsx). Ages count up every
 * second from the server's numbers; the list itself is fetched again from
 * `GET /api/console/outbox` on every change of the sandbox.
 */
import {
  formatAge,
  formatWhen,
  secondsUntil,
  serviceLabel,
} from "../format.ts";
import { liveAge, useLive, useNow } from "./_live.ts";
import type { OutboxAges } from "./_console_types.ts";
import { ParkedRows } from "./_parked_rows.tsx";
import { MessageId, OrderCode } from "./_order_code.tsx";

/** Props: the server's render of the twin, and when it measured the ages. */
export interface OutboxRowsProps {
  initial: OutboxAges;
  serverNow: string;
}

type Row = OutboxAges["oldest"][number];

/** Pending outbox rows in three sections: ready, waiting for a retry, parked. */
export default function OutboxRows(props: OutboxRowsProps) {
  const live = useLive("/api/console/outbox", props.initial, props.serverNow);
  const now = useNow();
  const data = live.data.value;
  const stamp = live.stamp.value;
  const ready = data.oldest.filter((r) => r.ready);
  // A parked row has no next attempt; it is listed in its own section.
  const waiting = data.oldest.filter((r) =>
    !r.ready && r.nextAttemptAt !== null
  );
  const age = (s: number | null) => formatAge(liveAge(s, stamp, now));

  return (
    <div class="outbox">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <p class="summary" data-testid="outbox-summary">
        <strong data-testid="outbox-pending">{data.pending}</strong> pending:
        {" "}
        <strong data-testid="outbox-ready">{data.ready}</strong> ready now,{" "}
        <strong data-testid="outbox-backing-off">{data.backingOff}</strong>{" "}
        waiting for a retry
        {data.parked > 0 && (
          <>
            , of which{" "}
            <strong data-testid="outbox-parked-count">{data.parked}</strong>
            {" "}
            parked
          </>
        )}. Oldest ready:{" "}
        <strong data-testid="outbox-oldest-ready-age">
          {age(data.oldestReadyAgeSeconds)}
        </strong>
        .
        {data.pending > data.oldest.length && (
          <>{` Showing the ${data.oldest.length} oldest.`}</>
        )}
      </p>
      <Section
        id="ready"
        title="Ready now"
        empty="No row is waiting for the relay."
        rows={ready}
        age={age}
        now={now}
      />
      <Section
        id="waiting"
        title="Waiting for a scheduled retry"
        empty="No row is backing off."
        rows={waiting}
        age={age}
        now={now}
      />
      <ParkedRows
        rows={data.parkedRows}
        groups={data.byService.filter((g) => g.parked > 0)}
        total={data.parked}
        age={age}
        onReleased={() => void live.reload()}
      />
    </div>
  );
}

interface SectionProps {
  id: "ready" | "waiting";
  title: string;
  empty: string;
  rows: Row[];
  age: (s: number) => string;
  now: number | null;
}

function Section({ id, title, empty, rows, age, now }: SectionProps) {
  return (
    <section
      class="panel"
      aria-labelledby={`outbox-${id}-title`}
      data-testid={`outbox-${id}`}
    >
      <h2 id={`outbox-${id}-title`}>
        {title} <span class="count">{rows.length}</span>
      </h2>
      {rows.length === 0
        ? <p class="muted">{empty}</p>
        : (
          <div class="table-wrap" tabIndex={0}>
            <table class="table">
              <thead>
                <tr>
                  <th>Message</th>
                  <th>Service</th>
                  <th>Event type</th>
                  <th>Order</th>
                  <th class="num">Age</th>
                  <th class="num">Attempts</th>
                  <th>Last error</th>
                  <th>Next attempt</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr
                    key={r.messageId}
                    data-testid={`outbox-row-${r.messageId}`}
                    data-ready={String(r.ready)}
                  >
                    <td>
                      <MessageId id={r.messageId} />
                    </td>
                    <td>{serviceLabel(r.service)}</td>
                    <td>{r.eventType}</td>
                    <td>
                      <OrderCode id={r.orderId} />
                    </td>
                    <td class="num age" data-testid="age">
                      {age(r.ageSeconds)}
                    </td>
                    <td class="num">{r.attempts}</td>
                    <td class="error-text">{r.lastError ?? "–"}</td>
                    <td>
                      <NextAttempt row={r} now={now} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  );
}

function NextAttempt({ row, now }: { row: Row; now: number | null }) {
  if (row.nextAttemptAt === null) {
    return (
      <span class="badge badge-bad" title="Parked by the loop guard">
        parked
      </span>
    );
  }
  if (row.ready) return <span class="badge badge-ok">now</span>;
  const left = now === null ? null : secondsUntil(row.nextAttemptAt, now);
  return (
    <span>
      {formatWhen(row.nextAttemptAt)}
      {left !== null && (
        <span class="muted">
          {left > 0 ? ` in ${formatAge(left)}` : " due"}
        </span>
      )}
    </span>
  );
}
