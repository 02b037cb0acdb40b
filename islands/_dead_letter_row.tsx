/**
 * One row of the dead letter table: a checkbox, what died and why, and the
 * per-row actions. After an action the row stays where it was and says what
 * happened (redriven, refused with the reason), so the operator sees the
 * click land even though the row is no longer a dead letter.
 */
import type { ComponentChildren } from "preact";
import { formatWhen, serviceLabel } from "../format.ts";
import type { DeliveryItem } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";

/** What the operator did to a row in this page. */
export interface Acted {
  action: "redriven" | "refused";
  /** The row's `deadAt` when it was acted on: a new one means dead again. */
  deadAt: string | null;
  reason?: string;
  item: DeliveryItem;
}

/** Props: the dead letter, what was done to it, and the row's handlers. */
export interface DeadLetterRowProps {
  item: DeliveryItem;
  acted?: Acted;
  checked: boolean;
  busy: boolean;
  onToggle: (checked: boolean) => void;
  onRedrive: () => void;
  onRefuse: () => void;
  /** The open refuse form for this row, if any: shown under the row. */
  refuseForm?: ComponentChildren;
}

/** The element id of a row's outcome, focused after an action on it. */
export const outcomeId = (id: number) => `dead-letter-outcome-${id}`;

/** The element id of the button that opens a refuse form. */
export const refuseButtonId = (which: number | "selected" | "all") =>
  `refuse-button-${which}`;

/** The columns of the table, for the form row's `colSpan`. */
export const DEAD_LETTER_COLUMNS = 9;

/**
 * A dead letter, its checkbox and its Redrive and Refuse buttons. Each
 * cell's data-label names it on a phone, where the rows are cards.
 */
export function DeadLetterRow(props: DeadLetterRowProps) {
  const { item: d, acted } = props;
  return (
    <>
      <tr
        data-testid={`dead-letter-row-${d.id}`}
        data-state={acted?.action ?? "dead"}
        data-subscriber={d.subscriber}
        class={acted ? "acted" : undefined}
      >
        <td class="select-cell" data-label="Select">
          <input
            type="checkbox"
            aria-label={`Select dead letter ${d.id}`}
            checked={props.checked}
            disabled={!!acted}
            onChange={(e) => props.onToggle(e.currentTarget.checked)}
            data-testid={`select-${d.id}`}
          />
        </td>
        <td data-label="#">
          <a href={`/console/deliveries/${d.id}`}>{d.id}</a>
        </td>
        <td data-label="Event type">{d.eventType}</td>
        <td data-label="Receiver">{serviceLabel(d.subscriber)}</td>
        <td data-label="Order">
          <OrderCode id={d.orderId} />
        </td>
        <td class="num" data-label="Attempts">
          {d.attempts}
          {d.redrives > 0 && (
            <span class="muted redrives" title="Times redriven">
              {d.redrives}× redriven
            </span>
          )}
        </td>
        <td class="error-text" data-label="Last error" data-testid="last-error">
          {d.lastError ?? "–"}
          {d.beyondReplayHorizon && (
            <span
              class="badge badge-warn horizon"
              title="Older than the receivers' replay horizon: a receiver refuses a message that old unless it remembers it"
              data-testid={`horizon-${d.id}`}
            >
              Beyond the replay horizon
            </span>
          )}
        </td>
        <td class="nowrap" data-label="Dead since">{formatWhen(d.deadAt)}</td>
        <td class="row-actions" data-label="Actions">
          {acted
            ? (
              <span
                // Not green: sent again is not applied (the outcome says).
                class="badge"
                id={outcomeId(d.id)}
                tabIndex={-1}
                data-testid={`outcome-${d.id}`}
              >
                {acted.action === "redriven"
                  ? "Redriven: sent again"
                  : `Refused: ${acted.reason}`}
              </span>
            )
            : (
              <>
                <button
                  type="button"
                  class="button small"
                  disabled={props.busy}
                  onClick={props.onRedrive}
                  data-testid={`redrive-${d.id}`}
                >
                  {d.beyondReplayHorizon ? "Redrive anyway" : "Redrive"}
                </button>
                <button
                  type="button"
                  class="button small refuse"
                  disabled={props.busy}
                  onClick={props.onRefuse}
                  id={refuseButtonId(d.id)}
                  data-testid={`refuse-${d.id}`}
                >
                  Refuse…
                </button>
              </>
            )}
        </td>
      </tr>
      {props.refuseForm && (
        <tr class="form-row">
          <td colSpan={DEAD_LETTER_COLUMNS}>{props.refuseForm}</td>
        </tr>
      )}
    </>
  );
}
