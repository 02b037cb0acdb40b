/**
 * A bulk job's progress bar: done of total, live (the job loop's rounds
 * tell the page to look again, `GET /api/console/jobs/:jobId`), with a
 * Cancel button while it runs.
 */
import { useSignal } from "@preact/signals";
import { useLive } from "./_live.ts";
import { failure, sendJson } from "./_console_api.ts";
import type { JobView } from "./_console_types.ts";

/** Props: the job as first seen. */
export interface JobProgressProps {
  job: JobView;
}

const VERB = { redrive: "Redriving", refuse: "Refusing" };
const DONE = { redrive: "Redrove", refuse: "Refused" };

/** One job: what it does, a progress bar, its state, and Cancel. */
export function JobProgress({ job }: JobProgressProps) {
  const live = useLive(`/api/console/jobs/${job.jobId}`, job);
  const error = useSignal("");
  const j = live.data.value;
  const percent = j.total ? Math.round((j.done / j.total) * 100) : 100;
  async function cancel() {
    const answer = await sendJson(
      "POST",
      `/api/console/jobs/${j.jobId}/cancel`,
    );
    if (!answer.ok) error.value = failure(answer);
    else live.data.value = answer.body;
  }
  return (
    <div class="job" data-testid={`job-${j.jobId}`} data-state={j.state}>
      <span class="job-what">
        {j.state === "running"
          ? `${
            VERB[j.action]
          } ${j.total} dead letters at ${j.ratePerSecond} a second`
          : j.state === "done" && j.outcome
          // A redrive job: what the receivers made of it, not a success.
          ? `${
            DONE[j.action]
          } ${j.changed} of ${j.total} dead letters: ${j.outcome.applied} applied, ${j.outcome.deadAgain.length} dead again${
            j.outcome.retrying ? `, ${j.outcome.retrying} still retrying` : ""
          }`
          : j.state === "done"
          ? `${
            DONE[j.action]
          } ${j.total} dead letters (${j.changed} were still dead)`
          : `Cancelled after ${j.done} of ${j.total}`}
      </span>
      <progress
        max={j.total}
        value={j.done}
        aria-label={`Job progress, ${percent} %`}
        data-testid="job-bar"
      />
      <span class="muted" data-testid="job-count">
        {j.done} / {j.total}
      </span>
      {j.state === "running" && (
        <button
          type="button"
          class="button small quiet"
          onClick={cancel}
          data-testid="job-cancel"
        >
          Cancel
        </button>
      )}
      {error.value && (
        <span class="field-error" role="alert">{error.value}</span>
      )}
    </div>
  );
}
