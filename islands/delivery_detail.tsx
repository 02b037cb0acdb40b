/**
 * One delivery, live: what it carries, every attempt (time, status,
 * duration, outcome, error), every operator action, and (while it is dead)
 * the Redrive and Refuse buttons. Twin of `GET /api/console/deliveries/:id`.
 * The envelope is printed as JSON text, which Preact escapes.
 */
import { useSignal } from "@preact/signals";
import {
  badgeClass,
  deliveryLabel,
  deliveryTone,
  formatWhen,
  serviceLabel,
} from "../format.ts";
import { useFocusNext } from "./_focus.ts";
import { useLive } from "./_live.ts";
import type { DeliveryDetailData } from "./_console_types.ts";
import {
  type ActionResult,
  redriveOne,
  refuseOne,
  supersedeOne,
} from "./_dead_letter_actions.ts";
import { RefuseForm } from "./_refuse_form.tsx";
import { SupersedeForm } from "./_supersede_form.tsx";
import { OrderCode } from "./_order_code.tsx";
import { HeldBehind } from "./_held_behind.tsx";

/** Props: the delivery's id and the server's render of its twin. */
export interface DeliveryDetailProps {
  id: number;
  initial: DeliveryDetailData;
}

const OUTCOME_TONE: Record<string, "ok" | "warn" | "bad"> = {
  done: "ok",
  retry: "warn",
  dead: "bad",
};

/** The delivery's facts, actions, attempts and envelope. */
export default function DeliveryDetail(props: DeliveryDetailProps) {
  const live = useLive(`/api/console/deliveries/${props.id}`, props.initial);
  const refusing = useSignal(false);
  const superseding = useSignal(false);
  const busy = useSignal(false);
  const notice = useSignal("");
  const error = useSignal("");
  const focusNext = useFocusNext();
  const { delivery: d, envelope, attempts, actions, supersededBy, supersedes } =
    live.data.value;

  async function act(run: () => Promise<ActionResult>, done: string) {
    busy.value = true;
    error.value = "";
    const result = await run();
    busy.value = false;
    if ("error" in result) {
      error.value = result.error;
      if (!refusing.value) focusNext.value = "delivery-error";
      return result.error;
    }
    refusing.value = false;
    notice.value = done;
    focusNext.value = "delivery-notice";
    await live.reload();
    return null;
  }

  return (
    <div
      class="delivery-detail"
      data-testid="delivery-detail"
      data-state={d.state}
    >
      <section class="panel">
        <p class="detail-state">
          <span
            class={badgeClass(deliveryTone(d.state, d.attempts))}
            data-testid="delivery-state"
          >
            {deliveryLabel(d.state, d.attempts)}
          </span>
          {d.heldBehind !== null && <HeldBehind id={d.heldBehind} />}{" "}
          {d.eventType} to <strong>{serviceLabel(d.subscriber)}</strong>
        </p>
        <dl class="delivery-facts">
          <dt>Message</dt>
          <dd>
            <code>{d.messageId}</code>
          </dd>
          <dt>Order</dt>
          <dd>
            <OrderCode id={d.orderId} />{" "}
            <code class="muted full-id">{d.orderId}</code>
          </dd>
          <dt>Created</dt>
          <dd>{formatWhen(d.createdAt)}</dd>
          <dt>Attempts</dt>
          <dd>
            {d.attempts}
            {d.redrives > 0 && `, redriven ${d.redrives}×`}
          </dd>
          <dt>Last answer</dt>
          <dd>
            {d.lastStatus ?? "–"}
            {d.lastError && <span class="error-text">: {d.lastError}</span>}
          </dd>
          {d.nextAttemptAt && (
            <>
              <dt>Next attempt</dt>
              <dd>{formatWhen(d.nextAttemptAt)}</dd>
            </>
          )}
          {d.deadAt && (
            <>
              <dt>{d.state === "dead" ? "Dead since" : "Last died"}</dt>
              <dd>{formatWhen(d.deadAt)}</dd>
            </>
          )}
          {d.state === "refused" && (
            <>
              <dt>Refused</dt>
              <dd data-testid="refused-reason">
                by {d.refusedBy} at {formatWhen(d.refusedAt)}: {d.refusedReason}
              </dd>
            </>
          )}
          {supersededBy && (
            <>
              <dt>Superseded</dt>
              <dd data-testid="superseded-by">
                by a corrected copy {supersededBy.deliveryId
                  ? (
                    <a href={`/console/deliveries/${supersededBy.deliveryId}`}>
                      {supersededBy.messageId}
                    </a>
                  )
                  : supersededBy.messageId} ({supersededBy.actor}:{" "}
                {supersededBy.reason})
              </dd>
            </>
          )}
          {supersedes !== null && (
            <>
              <dt>Supersedes</dt>
              <dd data-testid="supersedes">
                <a href={`/console/deliveries/${supersedes}`}>
                  dead letter {supersedes}
                </a>
              </dd>
            </>
          )}
        </dl>
        {d.state === "dead" && (
          <div class="detail-actions" data-testid="delivery-actions">
            <button
              type="button"
              class="button"
              disabled={busy.value}
              onClick={() =>
                act(() =>
                  redriveOne(d.id), "Redriven: the same message goes again.")}
              data-testid="redrive"
            >
              Redrive
            </button>
            {!refusing.value && (
              <button
                type="button"
                class="button refuse"
                disabled={busy.value}
                onClick={() => {
                  superseding.value = false;
                  refusing.value = true;
                }}
                id="delivery-refuse"
                data-testid="refuse"
              >
                Refuse…
              </button>
            )}
            {!superseding.value && (
              <button
                type="button"
                class="button"
                disabled={busy.value}
                onClick={() => {
                  refusing.value = false;
                  superseding.value = true;
                }}
                id="delivery-supersede"
                data-testid="supersede"
              >
                Supersede…
              </button>
            )}
            {superseding.value && (
              <SupersedeForm
                what={`delivery ${d.id}`}
                payload={envelope?.payload}
                testid="supersede-form"
                onCancel={() => {
                  superseding.value = false;
                  focusNext.value = "delivery-supersede";
                }}
                onRefuseInstead={() => {
                  superseding.value = false;
                  refusing.value = true;
                }}
                onSupersede={async (payload, reason) => {
                  const result = await supersedeOne(d.id, payload, reason);
                  if ("messageId" in result) {
                    superseding.value = false;
                    notice.value =
                      `Superseded: a corrected copy goes as message ${result.messageId}.`;
                    focusNext.value = "delivery-notice";
                    await live.reload();
                  }
                  return result;
                }}
              />
            )}
            {refusing.value && (
              <RefuseForm
                what={`delivery ${d.id}`}
                testid="refuse-form"
                onCancel={() => {
                  refusing.value = false;
                  focusNext.value = "delivery-refuse";
                }}
                onRefuse={(reason) =>
                  act(
                    () => refuseOne(d.id, reason),
                    "Refused: the obligation is closed.",
                  )}
              />
            )}
          </div>
        )}
        {notice.value && (
          <p
            class="notice"
            role="status"
            id="delivery-notice"
            tabIndex={-1}
            data-testid="delivery-notice"
          >
            {notice.value}
          </p>
        )}
        {(error.value || live.error.value) && (
          <p
            class="form-error"
            role="alert"
            id="delivery-error"
            tabIndex={-1}
          >
            {error.value || live.error.value}
          </p>
        )}
      </section>

      <section class="panel" aria-labelledby="attempts-title">
        <h2 id="attempts-title">Attempts</h2>
        {attempts.length === 0
          ? <p class="muted">Not attempted yet.</p>
          : (
            <div class="table-wrap" tabIndex={0}>
              <table class="table" data-testid="attempts">
                <thead>
                  <tr>
                    <th class="num">#</th>
                    <th>Started</th>
                    <th class="num">Status</th>
                    <th class="num">Duration</th>
                    <th>Outcome</th>
                    <th>Error</th>
                  </tr>
                </thead>
                <tbody>
                  {attempts.map((a, i) => (
                    <tr key={i} data-testid={`attempt-row-${i + 1}`}>
                      <td class="num">{a.attempt}</td>
                      <td>{formatWhen(a.startedAt)}</td>
                      <td class="num">{a.status ?? "–"}</td>
                      <td class="num">{a.durationMs ?? "–"} ms</td>
                      <td>
                        <span
                          class={badgeClass(OUTCOME_TONE[a.outcome] ?? "plain")}
                        >
                          {a.outcome}
                        </span>
                      </td>
                      <td class="error-text">{a.error ?? "–"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </section>

      {actions.length > 0 && (
        <section class="panel" aria-labelledby="actions-title">
          <h2 id="actions-title">Operator actions</h2>
          <div class="table-wrap" tabIndex={0}>
            <table class="table" data-testid="operator-actions">
              <thead>
                <tr>
                  <th>Action</th>
                  <th>By</th>
                  <th>Reason</th>
                  <th>When</th>
                </tr>
              </thead>
              <tbody>
                {actions.map((a, i) => (
                  <tr key={i} data-testid={`action-row-${i + 1}`}>
                    <td>{a.action}</td>
                    <td>{a.actor}</td>
                    <td>{a.reason ?? "–"}</td>
                    <td>{formatWhen(a.at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}

      <section class="panel" aria-labelledby="envelope-title">
        <h2 id="envelope-title">Envelope</h2>
        {/* Focusable, so that a keyboard can scroll a long envelope. */}
        <pre
          class="json"
          data-testid="envelope"
          tabIndex={0}
          role="region"
          aria-labelledby="envelope-title"
        >{JSON.stringify(envelope, null, 2)}</pre>
      </section>
    </div>
  );
}
