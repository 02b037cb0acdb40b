/**
 * Dead letters, live, with the operator's actions: redrive or refuse one row,
 * the selected rows, or all that match the page's filter (the server takes
 * them oldest first). Refusing asks for a reason. A row changes in place
 * after the click; the list is fetched again from its twin,
 * `GET /api/console/dead-letters`, on every change of the sandbox, and a
 * redriven row that dies again comes back as dead. Redriving the selected
 * rows or all matching asks for a dry run first: when they wait on earlier
 * dead letters of the same orders, the page names them and offers to
 * include them before anything is sent. After a redrive the page follows
 * the messages and says what was applied and what died again.
 */
import { useSignal } from "@preact/signals";
import { useFocusNext } from "./_focus.ts";
import { useLive } from "./_live.ts";
import type { DeadLettersData, DeliveryItem } from "./_console_types.ts";
import {
  type ActionResult,
  type DeadLetterTarget,
  redriveDryRun,
  redriveMany,
  redriveOne,
  refuseMany,
  refuseOne,
} from "./_dead_letter_actions.ts";
import {
  type Acted,
  DeadLetterRow,
  outcomeId,
  refuseButtonId,
} from "./_dead_letter_row.tsx";
import { RefuseForm } from "./_refuse_form.tsx";
import { JobProgress } from "./_job_progress.tsx";
import type { JobView, WaitedOn } from "./_console_types.ts";
import { RedriveOutcome } from "./_redrive_outcome.tsx";
import { WaitsOnList } from "./_waits_on.tsx";
import {
  type RedrivePreview,
  RedrivePreviewList,
} from "./_redrive_preview.tsx";

/** Props: the page's filter (also the "all matching" target) and its data. */
export interface DeadLettersProps {
  filter: Omit<DeadLetterTarget, "ids">;
  initial: DeadLettersData;
}

interface Row {
  item: DeliveryItem;
  acted?: Acted;
}

/** The ids of the notice that says what the last action did, and of the error. */
const NOTICE_ID = "dead-letter-notice";
const ERROR_ID = "dead-letter-error";
const CONFIRM_ID = "redrive-waits-go";

const plural = (n: number, one: string, many: string) =>
  `${n} ${n === 1 ? one : many}`;

/** The dead letter table with its toolbar. */
export default function DeadLetters(props: DeadLettersProps) {
  const query = new URLSearchParams(
    Object.entries(props.filter).filter(([, v]) => v) as [string, string][],
  ).toString();
  const live = useLive(
    `/api/console/dead-letters${query ? `?${query}` : ""}`,
    props.initial,
  );
  const selected = useSignal<ReadonlySet<number>>(new Set());
  const acted = useSignal<ReadonlyMap<number, Acted>>(new Map());
  const refusing = useSignal<number | "selected" | "all" | null>(null);
  const busy = useSignal(false);
  const notice = useSignal("");
  const error = useSignal("");
  const jobs = useSignal<JobView[]>([]);
  /** The ids of the last redrive done at once, followed until they settle. */
  const following = useSignal<number[] | null>(null);
  /**
   * A toolbar redrive held back by its dry run: what it waits on, and what
   * each would do at its receiver.
   */
  const waiting = useSignal<
    {
      which: "selected" | "all";
      waitsOn: WaitedOn[];
      preview: RedrivePreview;
    } | null
  >(null);
  const includeEarlier = useSignal(false);
  const focusNext = useFocusNext();

  // What the server says is dead, with what this page did laid over it.
  const items = live.data.value.items;
  const listed = new Set(items.map((i) => i.id));
  const rows: Row[] = items.map((item) => {
    const a = acted.value.get(item.id);
    // The same deadAt: an answer measured before the action took effect.
    // A new one: the redrive failed and the row is dead again.
    return { item, acted: a && a.deadAt === item.deadAt ? a : undefined };
  });
  for (const [id, a] of acted.value) {
    if (!listed.has(id)) rows.push({ item: a.item, acted: a });
  }
  rows.sort((x, y) =>
    (x.item.deadAt ?? "").localeCompare(y.item.deadAt ?? "") ||
    x.item.id - y.item.id
  );
  const open = rows.filter((r) => !r.acted);
  const chosen = open.filter((r) => selected.value.has(r.item.id))
    .map((r) => r.item.id);

  function mark(ids: number[], action: Acted["action"], reason?: string) {
    const next = new Map(acted.value);
    for (const id of ids) {
      const row = rows.find((r) => r.item.id === id);
      if (row) {
        next.set(id, {
          action,
          reason,
          deadAt: row.item.deadAt,
          item: row.item,
        });
      }
    }
    acted.value = next;
    const still = new Set(selected.value);
    for (const id of ids) still.delete(id);
    selected.value = still;
  }

  /**
   * Runs an action on `which` (a row's id, or the toolbar's targets);
   * returns an error message for the refuse form, or null.
   */
  async function act(
    which: number | "selected" | "all",
    run: () => Promise<ActionResult>,
    action: Acted["action"],
    reason?: string,
  ): Promise<string | null> {
    busy.value = true;
    notice.value = "";
    error.value = "";
    waiting.value = null;
    following.value = null;
    const result = await run();
    busy.value = false;
    if ("error" in result) {
      error.value = result.error;
      // A refuse form says it itself, and keeps the focus.
      if (refusing.value === null) focusNext.value = ERROR_ID;
      return result.error;
    }
    refusing.value = null;
    if (result.jobId) {
      const job = await fetch(`/api/console/jobs/${result.jobId}`)
        .then((r) => r.json());
      jobs.value = [job, ...jobs.value];
      notice.value = `Started a job for ${
        plural(result.count ?? 0, "dead letter", "dead letters")
      }, oldest first.`;
      return null;
    }
    mark(result.ids, action, reason);
    following.value = action === "redriven" && result.ids.length
      ? result.ids
      : null;
    notice.value = `${action === "redriven" ? "Redrove" : "Refused"} ${
      plural(result.ids.length, "dead letter", "dead letters")
    }${
      action === "redriven" && result.ids.length > 1 ? ", oldest first" : ""
    }.`;
    focusNext.value = typeof which === "number" ? outcomeId(which) : NOTICE_ID;

    void live.reload();
    return null;
  }

  /**
   * Redrives the toolbar's targets, after a dry run: when they wait on
   * earlier dead letters, or any would not simply apply at its receiver
   * (not yet, refused, a repeat, a failure, past the horizon), it stops to
   * show what each would do and waits for a confirmation.
   */
  async function redriveChecked(which: "selected" | "all") {
    const target = targetOf(which);
    // The last action's notice goes at once: it no longer says what the
    // page is doing.
    notice.value = "";
    error.value = "";
    busy.value = true;
    const { waitsOn, preview } = await redriveDryRun(target);
    busy.value = false;
    // Held back when an earlier message is dead too, or a message would
    // not apply, with what each would do at its receiver; otherwise it
    // goes, and its report follows.
    if (waitsOn.length > 0 || preview.some((p) => p.outcome !== "apply")) {
      includeEarlier.value = false;
      waiting.value = { which, waitsOn, preview };
      focusNext.value = CONFIRM_ID;
      return;
    }
    await act(which, () => redriveMany(target), "redriven");
  }

  const targetOf = (which: "selected" | "all"): DeadLetterTarget =>
    which === "selected" ? { ids: chosen } : props.filter;
  const whatOf = (which: number | "selected" | "all") =>
    typeof which === "number"
      ? `dead letter ${which}`
      : which === "selected"
      ? plural(chosen.length, "selected dead letter", "selected dead letters")
      : `all ${
        plural(open.length, "matching dead letter", "matching dead letters")
      }`;

  const form = (which: number | "selected" | "all") => (
    <RefuseForm
      key={String(which)}
      what={whatOf(which)}
      testid={typeof which === "number"
        ? `refuse-form-${which}`
        : `refuse-${which}-form`}
      onCancel={() => {
        refusing.value = null;
        focusNext.value = refuseButtonId(which);
      }}
      onRefuse={(reason) =>
        act(
          which,
          () =>
            typeof which === "number"
              ? refuseOne(which, reason)
              : refuseMany(targetOf(which), reason),
          "refused",
          reason,
        )}
    />
  );

  const allChecked = open.length > 0 && chosen.length === open.length;

  return (
    <div class="dead-letters">
      <div class="toolbar" data-testid="dead-letter-toolbar">
        <span class="muted" data-testid="dead-letter-count">
          {plural(open.length, "dead letter", "dead letters")}
          {chosen.length > 0 && `, ${chosen.length} selected`}
        </span>
        <button
          type="button"
          class="button small"
          disabled={busy.value || chosen.length === 0}
          onClick={() => redriveChecked("selected")}
          data-testid="redrive-selected"
        >
          Redrive selected
        </button>
        <button
          type="button"
          class="button small refuse"
          disabled={busy.value || chosen.length === 0}
          onClick={() => refusing.value = "selected"}
          id={refuseButtonId("selected")}
          data-testid="refuse-selected"
        >
          Refuse selected…
        </button>
        <span class="toolbar-gap" />
        <button
          type="button"
          class="button small"
          disabled={busy.value || open.length === 0}
          onClick={() => redriveChecked("all")}
          data-testid="redrive-all"
        >
          Redrive all matching
        </button>
        <button
          type="button"
          class="button small refuse"
          disabled={busy.value || open.length === 0}
          onClick={() => refusing.value = "all"}
          id={refuseButtonId("all")}
          data-testid="refuse-all"
        >
          Refuse all matching…
        </button>
      </div>
      {(refusing.value === "selected" || refusing.value === "all") &&
        <div class="toolbar-form">{form(refusing.value)}</div>}
      {waiting.value && (
        <div class="confirm" role="group" data-testid="redrive-waits">
          <RedrivePreviewList
            preview={waiting.value.preview}
            testid="redrive-preview"
          />
          {waiting.value.waitsOn.length > 0 && (
            <WaitsOnList
              waitsOn={waiting.value.waitsOn}
              include={includeEarlier.value}
              onInclude={(on) => includeEarlier.value = on}
              testid="redrive-waits-on"
            />
          )}
          <button
            type="button"
            class="button small"
            disabled={busy.value}
            onClick={() => {
              const { which } = waiting.value!;
              const include = includeEarlier.value;
              void act(
                which,
                () =>
                  redriveMany(targetOf(which), include),
                "redriven",
              );
            }}
            id={CONFIRM_ID}
            data-testid="redrive-waits-go"
          >
            Redrive
          </button>
          <button
            type="button"
            class="button small quiet"
            onClick={() =>
              waiting.value = null}
            data-testid="redrive-waits-cancel"
          >
            Cancel
          </button>
        </div>
      )}
      {jobs.value.length > 0 && (
        <div class="jobs">
          {jobs.value.map((job) => <JobProgress key={job.jobId} job={job} />)}
        </div>
      )}
      {notice.value && (
        // Neutral after a redrive: it sent them; the outcome says how it went.
        <p
          class={following.value ? "notice neutral" : "notice"}
          role="status"
          id={NOTICE_ID}
          tabIndex={-1}
          data-testid="dead-letter-notice"
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
      {(error.value || live.error.value) && (
        <p
          class="form-error"
          role="alert"
          id={ERROR_ID}
          tabIndex={-1}
          data-testid="dead-letter-error"
        >
          {error.value || live.error.value}
        </p>
      )}
      {rows.length === 0
        ? (
          <p class="muted panel" data-testid="dead-letters-empty">
            No dead letters match. Everything that was sent arrived, or was
            closed by an operator.
          </p>
        )
        : (
          <div class="table-wrap" tabIndex={0}>
            <table class="table cards" data-testid="dead-letters-table">
              <thead>
                <tr>
                  {
                    /* On a phone the head is hidden but this cell: the
                      rows are cards, and "Select all" keeps its words. */
                  }
                  <th class="select-all-cell">
                    <label>
                      <input
                        type="checkbox"
                        aria-label="Select all"
                        checked={allChecked}
                        disabled={open.length === 0}
                        onChange={(e) =>
                          selected.value = e.currentTarget.checked
                            ? new Set(open.map((r) => r.item.id))
                            : new Set()}
                        data-testid="select-all"
                      />
                      <span class="select-all-words" aria-hidden="true">
                        Select all
                      </span>
                    </label>
                  </th>
                  <th>#</th>
                  <th>Event type</th>
                  <th>Receiver</th>
                  <th>Order</th>
                  <th class="num">Attempts</th>
                  <th>Last error</th>
                  <th>Dead since</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(({ item, acted }) => (
                  <DeadLetterRow
                    key={item.id}
                    item={item}
                    acted={acted}
                    busy={busy.value}
                    checked={!acted && selected.value.has(item.id)}
                    onToggle={(on) => {
                      const next = new Set(selected.value);
                      if (on) next.add(item.id);
                      else next.delete(item.id);
                      selected.value = next;
                    }}
                    onRedrive={() =>
                      act(
                        item.id,
                        () => redriveOne(item.id, item.beyondReplayHorizon),
                        "redriven",
                      )}
                    onRefuse={() => refusing.value = item.id}
                    refuseForm={refusing.value === item.id
                      ? form(item.id)
                      : undefined}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}
