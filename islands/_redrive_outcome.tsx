/**
 * What became of a redrive, followed live: a redrive only sends messages
 * again, and whether they were applied is the receiver's to say. The
 * report counts applied, still retrying and dead again (with the answer
 * that killed each) from `GET /api/console/redrive-outcome?ids=`, looked
 * at again on every change of the sandbox until none is retrying. It is
 * green only when every one was applied.
 */
import { useEffect } from "preact/hooks";
import { useLive } from "./_live.ts";
import type { RedriveOutcomeView } from "./_console_types.ts";
import { serviceLabel } from "../format.ts";

/** Props: the ids a redrive answered with. */
export interface RedriveOutcomeProps {
  ids: number[];
}

const plural = (n: number, one: string, many: string) =>
  `${n} ${n === 1 ? one : many}`;

/** The one line (and list of failures) that says how a redrive went. */
export function RedriveOutcome({ ids }: RedriveOutcomeProps) {
  const live = useLive<RedriveOutcomeView>(
    `/api/console/redrive-outcome?ids=${ids.join(",")}`,
    {
      applied: 0,
      retrying: ids.length,
      deadAgain: [],
      refused: 0,
      notRedriven: 0,
      settled: false,
    },
  );
  // The first look: the change that the redrive caused may have come and
  // gone before this report was on the page.
  useEffect(() => void live.reload(), []);
  const o = live.data.value;
  const dead = o.deadAgain.length;
  const allApplied = o.settled && o.applied === ids.length;
  const tone = allApplied ? "ok" : o.settled ? "bad" : "pending";
  const parts = [
    `${o.applied} applied`,
    ...(o.retrying ? [`${o.retrying} still retrying`] : []),
    `${dead} dead again`,
    ...(o.refused ? [`${o.refused} refused since`] : []),
    ...(o.notRedriven ? [`${o.notRedriven} not sent yet`] : []),
  ];
  return (
    <div
      class={`redrive-outcome ${tone}`}
      role="status"
      data-testid="redrive-outcome"
      data-count={ids.length}
      data-settled={String(o.settled)}
      data-applied={o.applied}
      data-dead-again={dead}
      data-retrying={o.retrying}
    >
      <p data-testid="redrive-outcome-summary">
        {o.settled ? "Outcome" : "Following"} of{" "}
        {plural(ids.length, "redriven message", "redriven messages")}:{" "}
        {parts.join(", ")}.
      </p>
      {dead > 0 && (
        <ul class="dead-again" data-testid="redrive-dead-again">
          {o.deadAgain.map((d) => (
            <li key={d.id} data-testid={`dead-again-${d.id}`}>
              <a href={`/console/deliveries/${d.id}`}>#{d.id}</a> {d.eventType}
              {" "}
              to {serviceLabel(d.subscriber)}:{" "}
              <span class="error-text">{d.lastError}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
