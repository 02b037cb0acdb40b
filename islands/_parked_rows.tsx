/**
 * The outbox rows parked by the relay's loop guard, apart from the rows that
 * are ready or wait for a scheduled retry: nothing automatic moves them, only
 * the sender's next command or an operator. Release one row, a group (sender
 * and event type) or all of them; as the failure groups' actions do, a click
 * first shows what it will do and how many rows, and the release goes only
 * once the operator confirms it (`POST /api/console/outbox/release`, with
 * the page's CSRF token).
 */
import { useSignal } from "@preact/signals";
import { idTail, serviceLabel } from "../format.ts";
import { failure, sendJson } from "./_console_api.ts";
import { useFocusNext } from "./_focus.ts";
import type { OutboxAges, ReleaseAnswer } from "./_console_types.ts";
import { MessageId, OrderCode } from "./_order_code.tsx";

type Parked = OutboxAges["parkedRows"][number];

/** Which parked rows a release means; none: all of the sandbox's. */
interface Target {
  messageId?: string;
  service?: string;
  eventType?: string;
}

interface Pending {
  target: Target;
  /** What the confirmation names: "message 0a1b2c", "orders · OrderPlaced". */
  what: string;
  count: number;
}

/** Props: the rows and groups the twin listed, and how to look again. */
export interface ParkedRowsProps {
  rows: Parked[];
  /** Senders and event types with parked rows, and how many each. */
  groups: { service: string; eventType: string; parked: number }[];
  /** Parked rows in all (the list shows the oldest only). */
  total: number;
  age: (seconds: number) => string;
  /** Called after a release: the list is fetched again. */
  onReleased: () => void;
}

const NOTICE_ID = "parked-notice";
const CONFIRM_ID = "parked-confirm-go";

const plural = (n: number) => `${n} parked row${n === 1 ? "" : "s"}`;

/** The parked rows' section, with its Release buttons and confirmation. */
export function ParkedRows(props: ParkedRowsProps) {
  const pending = useSignal<Pending | null>(null);
  const busy = useSignal(false);
  const notice = useSignal("");
  const error = useSignal("");
  const focusNext = useFocusNext();

  function ask(p: Pending) {
    pending.value = p;
    notice.value = "";
    error.value = "";
    focusNext.value = CONFIRM_ID;
  }

  async function confirm() {
    const p = pending.value;
    if (!p) return;
    busy.value = true;
    error.value = "";
    const answer = await sendJson(
      "POST",
      "/api/console/outbox/release",
      p.target,
    );
    busy.value = false;
    if (!answer.ok) {
      error.value = failure(answer);
      return;
    }
    pending.value = null;
    const { count } = answer.body as ReleaseAnswer;
    // Zero: a command of the sender, or another operator, was first.
    notice.value = count === 0
      ? "Nothing was released: those rows are no longer parked."
      : `Released ${plural(count)}: the relay sends them now.`;
    focusNext.value = NOTICE_ID;
    props.onReleased();
  }

  const p = pending.value;
  return (
    <section
      class="panel"
      aria-labelledby="outbox-parked-title"
      data-testid="outbox-parked"
    >
      <h2 id="outbox-parked-title">
        Parked by the loop guard <span class="count">{props.total}</span>
      </h2>
      <p class="muted">
        The relay used up today's automatic retries for this sandbox, so these
        rows wait until the sender's next command or an operator releases them.
        Release them once the cause is fixed: a publish that fails again parks
        them again at once.
      </p>
      {props.total > 0 && (
        <div class="toolbar" data-testid="parked-toolbar">
          {props.groups.map((g) => (
            <button
              type="button"
              class="button small"
              key={`${g.service} ${g.eventType}`}
              disabled={busy.value}
              onClick={() =>
                ask({
                  target: { service: g.service, eventType: g.eventType },
                  what: `${serviceLabel(g.service)} · ${g.eventType}`,
                  count: g.parked,
                })}
              data-testid={`release-group-${g.service}-${g.eventType}`}
            >
              Release {serviceLabel(g.service)} · {g.eventType} ({g.parked})
            </button>
          ))}
          <span class="toolbar-gap" />
          <button
            type="button"
            class="button small"
            disabled={busy.value}
            onClick={() =>
              ask({ target: {}, what: "this sandbox", count: props.total })}
            data-testid="release-all"
          >
            Release all ({props.total})
          </button>
        </div>
      )}
      {p && (
        <div class="confirm" role="group" data-testid="release-confirm">
          <span data-testid="release-confirm-count">
            Release {plural(p.count)} of {p.what}? They are sent now.
          </span>
          <button
            type="button"
            class="button small"
            disabled={busy.value}
            aria-busy={busy.value || undefined}
            onClick={confirm}
            id={CONFIRM_ID}
            data-testid="release-confirm-go"
          >
            Release {plural(p.count)}
          </button>
          <button
            type="button"
            class="button small quiet"
            disabled={busy.value}
            onClick={() => pending.value = null}
            data-testid="release-confirm-cancel"
          >
            Cancel
          </button>
        </div>
      )}
      {notice.value && (
        <p
          class="notice"
          role="status"
          id={NOTICE_ID}
          tabIndex={-1}
          data-testid="release-notice"
        >
          {notice.value}
        </p>
      )}
      {error.value && (
        <p class="form-error" role="alert" data-testid="release-error">
          {error.value}
        </p>
      )}
      {props.rows.length === 0
        ? <p class="muted">No row is parked.</p>
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
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {props.rows.map((r) => (
                  <tr
                    key={r.messageId}
                    data-testid={`outbox-parked-row-${r.messageId}`}
                  >
                    <td>
                      <MessageId id={r.messageId} />
                    </td>
                    <td>{serviceLabel(r.service)}</td>
                    <td>{r.eventType}</td>
                    <td>
                      <OrderCode id={r.orderId} />
                    </td>
                    <td class="num age">{props.age(r.ageSeconds)}</td>
                    <td class="num">{r.attempts}</td>
                    <td class="error-text">{r.lastError ?? "–"}</td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="button small"
                        disabled={busy.value}
                        onClick={() =>
                          ask({
                            target: { messageId: r.messageId },
                            what: `message ${idTail(r.messageId)}`,
                            count: 1,
                          })}
                        data-testid={`release-${r.messageId}`}
                      >
                        Release
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
