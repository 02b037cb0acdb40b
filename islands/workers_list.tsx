/**
 * The workers, live: every process of relays or consumers by its heartbeat,
 * live or silent, with what it held at its last beat. Shared by every
 * sandbox and read-only. Heartbeats send no change notice, so the list is
 * fetched again every 5 s (the default beat) besides the usual changes.
 * Twin of `GET /api/console/workers`.
 */
import { useEffect } from "preact/hooks";
import { formatWhen } from "../format.ts";
import { useLive } from "./_live.ts";
import type { WorkersData } from "./_console_types.ts";

/** Props: the server's render of the twin. */
export interface WorkersListProps {
  initial: WorkersData;
}

/** How often the list is read again: the default beat. */
const REFRESH_MS = 5_000;

/** One row per worker, live ones first. */
export default function WorkersList(props: WorkersListProps) {
  const live = useLive("/api/console/workers", props.initial);
  useEffect(() => {
    const timer = setInterval(() => void live.reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const { items } = live.data.value;
  return (
    <div class="workers">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      {items.length === 0
        ? (
          <p class="muted" data-testid="workers-none">
            No worker is running: nothing relays or delivers messages.
          </p>
        )
        : (
          <div class="table-wrap">
            <table class="table" data-testid="workers">
              <thead>
                <tr>
                  <th>Worker</th>
                  <th>State</th>
                  <th>Host</th>
                  <th class="num">Pid</th>
                  <th>Roles</th>
                  <th>Transport</th>
                  <th class="num">Leases</th>
                  <th>Last claim</th>
                  <th>Last beat</th>
                  <th>Version</th>
                </tr>
              </thead>
              <tbody>
                {items.map((w) => (
                  <tr key={w.id} data-testid={`worker-${w.id}`}>
                    <td>
                      <code>{w.id}</code>
                    </td>
                    <td>
                      <span
                        class={w.state === "live"
                          ? "badge"
                          : "badge badge-warn"}
                        data-testid="worker-state"
                      >
                        {w.state}
                      </span>
                    </td>
                    <td>{w.host}</td>
                    <td class="num">{w.pid}</td>
                    <td>{w.roles.join(", ")}</td>
                    <td>{w.transport}</td>
                    <td class="num">{w.leases}</td>
                    <td>{w.lastClaimAt ? formatWhen(w.lastClaimAt) : "–"}</td>
                    <td>{formatWhen(w.lastBeatAt)}</td>
                    <td>{w.version}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}
