/**
 * Failure groups, live: dead letters by receiver, event type and error
 * pattern, each with Redrive and Refuse for the whole group. A click first
 * asks the server for a dry run (`"dryRun": true`) and shows its count;
 * the action goes only after the operator confirms it. A group of more
 * than 100 runs as a job, shown with its progress bar until it is done.
 * A dry run that finds dead letters beyond the replay horizon says so, and
 * redriving them too needs its own tick. A redrive's dry run also names
 * the earlier dead letters of the same orders the group waits on (sent
 * without them, the receiver answers "not yet" and they die again), with a
 * tick to include them. After a redrive the page follows the messages and
 * says what was applied and what died again, never a bare success.
 */
import { useSignal } from "@preact/signals";
import { useLive } from "./_live.ts";
import { failure, sendJson } from "./_console_api.ts";
import type { FailureGroup, JobView, WaitedOn } from "./_console_types.ts";
import { JobProgress } from "./_job_progress.tsx";
import { RedriveOutcome } from "./_redrive_outcome.tsx";
import { WaitsOnList } from "./_waits_on.tsx";
import {
  type RedrivePreview,
  RedrivePreviewList,
} from "./_redrive_preview.tsx";
import { formatWhen, serviceLabel } from "../format.ts";

/** Props: the groups and the sandbox's recent jobs, as the server saw them. */
export interface FailureGroupsProps {
  initial: { groups: FailureGroup[] };
  jobs: JobView[];
}

interface Pending {
  key: string;
  action: "redrive" | "refuse";
  count: number;
  beyond: number;
  /** A redrive's: the earlier dead letters the group waits on. */
  waitsOn: WaitedOn[];
  /** A redrive's: what each would do at its receiver. */
  preview: RedrivePreview;
}

/** More than this many rows go as a job (services/console/bulk.ts). */
const JOB_THRESHOLD = 100;

const plural = (n: number) => `${n} dead letter${n === 1 ? "" : "s"}`;

/** The groups table, the confirmation of an action, and the jobs. */
export default function FailureGroups(props: FailureGroupsProps) {
  const live = useLive("/api/console/failure-groups", props.initial);
  const jobs = useSignal<JobView[]>(props.jobs);
  const pending = useSignal<Pending | null>(null);
  const reason = useSignal("");
  const force = useSignal(false);
  const includeEarlier = useSignal(false);
  /** The ids of the last redrive done at once, followed until they settle. */
  const following = useSignal<number[] | null>(null);
  const rate = useSignal(50);
  const busy = useSignal(false);
  const notice = useSignal("");
  const error = useSignal("");

  async function ask(key: string, action: Pending["action"]) {
    // A new action: the last one's report no longer says what is going on.
    following.value = null;
    busy.value = true;
    error.value = "";
    notice.value = "";
    const answer = await sendJson(
      "POST",
      `/api/console/dead-letters/${action}`,
      { group: key, dryRun: true },
    );
    busy.value = false;
    if (!answer.ok) {
      error.value = failure(answer);
      return;
    }
    pending.value = {
      key,
      action,
      count: answer.body.count,
      beyond: answer.body.beyondReplayHorizon ?? 0,
      waitsOn: answer.body.waitsOn ?? [],
      preview: answer.body.preview ?? [],
    };
    reason.value = "";
    force.value = false;
    includeEarlier.value = false;
  }

  async function confirm() {
    const p = pending.value;
    if (!p) return;
    if (p.action === "refuse" && !reason.value.trim()) {
      error.value = "A reason is required.";
      return;
    }
    busy.value = true;
    error.value = "";
    const answer = await sendJson(
      "POST",
      `/api/console/dead-letters/${p.action}`,
      {
        group: p.key,
        ...(p.count > JOB_THRESHOLD ? { ratePerSecond: rate.value } : {}),
        ...(p.action === "refuse" ? { reason: reason.value.trim() } : {}),
        ...(p.action === "redrive" && force.value ? { force: true } : {}),
        ...(p.action === "redrive" && includeEarlier.value
          ? { includeEarlier: true }
          : {}),
      },
    );
    busy.value = false;
    if (!answer.ok) {
      error.value = failure(answer);
      return;
    }
    pending.value = null;
    following.value = null;
    if (answer.body.jobId) {
      const job = await fetch(`/api/console/jobs/${answer.body.jobId}`)
        .then((r) => r.json());
      jobs.value = [job, ...jobs.value];
      notice.value = `Started a job for ${plural(answer.body.count)}.`;
    } else {
      notice.value = `${p.action === "redrive" ? "Redrove" : "Refused"} ${
        plural(answer.body.count)
      }${p.action === "redrive" ? ", oldest first" : ""}.`;
      if (p.action === "redrive" && answer.body.ids?.length) {
        following.value = answer.body.ids;
      }
    }
    void live.reload();
  }

  const groups = live.data.value.groups;
  const p = pending.value;
  return (
    <section class="panel failure-groups" data-testid="failure-groups">
      <h2>Failure groups</h2>
      {jobs.value.length > 0 && (
        <div class="jobs" data-testid="jobs">
          {jobs.value.map((job) => <JobProgress key={job.jobId} job={job} />)}
        </div>
      )}
      {notice.value && (
        // Neutral: a redrive sent them; the outcome below says how it went.
        <p
          class={following.value ? "notice neutral" : "notice"}
          role="status"
          data-testid="group-notice"
        >
          {notice.value}
        </p>
      )}
      {
        // Always there, so that the report's key never moves its siblings
        // (a moved element loses the keyboard's focus).
      }
      <div class="outcome-slot">
        {following.value && (
          <RedriveOutcome key={following.value.join()} ids={following.value} />
        )}
      </div>
      {error.value && (
        <p class="form-error" role="alert" data-testid="group-error">
          {error.value}
        </p>
      )}
      {p && (
        <div class="confirm" role="group" data-testid="group-confirm">
          <p data-testid="group-confirm-count">
            {p.action === "redrive" ? "Redrive" : "Refuse"} {plural(p.count)}
            {" "}
            of this group, oldest first?
            {p.count > JOB_THRESHOLD &&
              " That is more than 100: they go as a job."}
          </p>
          {p.action === "redrive" && p.beyond > 0 && (
            <p class="warning" data-testid="group-horizon-warning">
              {plural(p.beyond)} {p.beyond === 1 ? "is" : "are"}{" "}
              older than the receivers' replay horizon: a receiver refuses a
              message that old unless it remembers it.{" "}
              <label>
                <input
                  type="checkbox"
                  checked={force.value}
                  onChange={(e) =>
                    force.value = e.currentTarget.checked}
                  data-testid="group-force"
                />{" "}
                Redrive those too
              </label>
            </p>
          )}
          {p.action === "redrive" && (
            <RedrivePreviewList preview={p.preview} testid="group-preview" />
          )}
          {p.action === "redrive" && p.waitsOn.length > 0 && (
            <WaitsOnList
              waitsOn={p.waitsOn}
              include={includeEarlier.value}
              onInclude={(on) => includeEarlier.value = on}
              testid="group-waits-on"
            />
          )}
          {p.action === "refuse" && (
            <label>
              Reason{" "}
              <input
                value={reason.value}
                maxLength={500}
                onInput={(e) => reason.value = e.currentTarget.value}
                data-testid="group-reason"
              />
            </label>
          )}
          {p.count > JOB_THRESHOLD && (
            <label>
              Rows per second{" "}
              <input
                type="number"
                min={1}
                max={1000}
                value={rate.value}
                onInput={(e) => rate.value = Number(e.currentTarget.value)}
                data-testid="group-rate"
              />
            </label>
          )}
          <button
            type="button"
            class={p.action === "refuse"
              ? "button small refuse"
              : "button small"}
            disabled={busy.value || p.count === 0}
            onClick={confirm}
            data-testid="group-confirm-go"
          >
            {p.action === "redrive" ? "Redrive" : "Refuse"} {plural(
              p.count + (includeEarlier.value ? p.waitsOn.length : 0),
            )}
          </button>
          <button
            type="button"
            class="button small quiet"
            onClick={() => pending.value = null}
            data-testid="group-confirm-cancel"
          >
            Cancel
          </button>
        </div>
      )}
      {groups.length === 0
        ? (
          <p class="muted" data-testid="groups-empty">
            No failure groups: there are no dead letters.
          </p>
        )
        : (
          <div class="table-wrap" tabIndex={0}>
            <table class="table cards" data-testid="groups-table">
              <thead>
                <tr>
                  <th>Receiver</th>
                  <th>Event type</th>
                  <th>Error</th>
                  <th class="num">Count</th>
                  <th>First</th>
                  <th>Last</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {groups.map((g) => (
                  <tr key={g.key} data-testid={`group-${g.key}`}>
                    <td data-label="Receiver">{serviceLabel(g.subscriber)}</td>
                    <td data-label="Event type">{g.eventType}</td>
                    <td class="error-text" data-label="Error">
                      <a href={`/console/dead-letters?group=${g.key}`}>
                        {g.pattern || "(no error text)"}
                      </a>
                    </td>
                    <td
                      class="num"
                      data-label="Count"
                      data-testid="group-count"
                    >
                      {g.count}
                    </td>
                    <td class="nowrap" data-label="First">
                      {formatWhen(g.firstDeadAt)}
                    </td>
                    <td class="nowrap" data-label="Last">
                      {formatWhen(g.lastDeadAt)}
                    </td>
                    {/* Stacked, so that the error keeps the width. */}
                    <td class="row-actions stack" data-label="Actions">
                      <button
                        type="button"
                        class="button small"
                        disabled={busy.value}
                        onClick={() =>
                          ask(g.key, "redrive")}
                        data-testid={`group-redrive-${g.key}`}
                      >
                        Redrive group
                      </button>
                      <button
                        type="button"
                        class="button small refuse"
                        disabled={busy.value}
                        onClick={() =>
                          ask(g.key, "refuse")}
                        data-testid={`group-refuse-${g.key}`}
                      >
                        Refuse group…
                      </button>
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
