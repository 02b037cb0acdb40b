/**
 * The receivers, live: each one's last hour (attempts, success rate, last
 * error, throughput and p95 latency), then every receiver's chart.
 * Twin of
 * `GET /api/console/receivers`.
 */
import { RateBar } from "./_rate_bar.tsx";
import { formatWhen, serviceLabel } from "../format.ts";
import { ReceiverChartGrid } from "./_receiver_charts.tsx";
import { useLive } from "./_live.ts";
import type { ReceiversData } from "./_console_types.ts";

/** Props: the server's render of the twin. */
export interface ReceiversListProps {
  initial: ReceiversData;
}

/** One row per receiver, with its charts beside the figures. */
export default function ReceiversList(props: ReceiversListProps) {
  const live = useLive("/api/console/receivers", props.initial);
  const { receivers } = live.data.value;
  return (
    <div class="receivers">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <div class="table-wrap" tabIndex={0}>
        <table class="table" data-testid="receivers">
          <thead>
            <tr>
              <th>Receiver</th>
              <th>State</th>
              <th class="num">Attempts</th>
              <th>Success</th>
              <th class="num">Done per minute</th>
              <th class="num">p95</th>
              <th>Last error</th>
            </tr>
          </thead>
          <tbody>
            {receivers.map((r) => (
              <tr key={r.name} data-testid={`receiver-${r.name}`}>
                <td>{serviceLabel(r.name)}</td>
                <td>
                  <span class={r.paused ? "badge badge-warn" : "badge"}>
                    {r.paused ? "paused" : "running"}
                  </span>
                </td>
                <td class="num">{r.attempts}</td>
                <td>
                  <RateBar rate={r.successRate} label={serviceLabel(r.name)} />
                </td>
                <td class="num">{r.throughputPerMinute.toFixed(2)}</td>
                <td class="num">
                  {r.p95LatencyMs === null ? "–" : `${r.p95LatencyMs} ms`}
                </td>
                <td class="error-text">
                  {r.lastError
                    ? `${r.lastError} (${formatWhen(r.lastErrorAt)})`
                    : "–"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <section class="panel" aria-labelledby="receivers-hour-title">
        <h2 id="receivers-hour-title">Last hour, minute by minute</h2>
        <p class="muted">
          Done deliveries per minute (green bars, left axis) and the p95 latency
          of every attempt (blue line, right axis); the current minute is on the
          right. Point at a minute for its figures.
        </p>
        <ReceiverChartGrid receivers={receivers} />
      </section>
    </div>
  );
}
