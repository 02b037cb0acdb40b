/**
 * The console's list of test-checkout events that the webhook has not taken:
 * each is a payment the visitor made that its order does not know of yet.
 * One that gave up can be sent again.
 */
import { formatWhen } from "../format.ts";
import type { CheckoutEvents } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";

/** The table, or a line saying every event was taken. */
export function CheckoutEventsList(props: {
  events: CheckoutEvents;
  /** Sends a given-up event again; absent where nobody may. */
  onSendAgain?: (eventId: string) => void;
  busy?: ReadonlySet<string>;
}) {
  const { total, items } = props.events;
  if (items.length === 0) {
    return (
      <p class="muted" data-testid="no-checkout-events">
        The webhook has taken every checkout event.
      </p>
    );
  }
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid="checkout-events">
        <thead>
          <tr>
            <th>Event</th>
            <th>Order</th>
            <th class="num">Posts</th>
            <th>Last answer</th>
            <th>State</th>
            <th>Since</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={e.eventId}>
              <td>
                <code>{e.eventId}</code>
              </td>
              <td>
                {e.orderId
                  ? <OrderCode id={e.orderId} />
                  : <span class="muted">none</span>}
              </td>
              <td class="num">{e.attempts}</td>
              <td class="error-text">
                {e.lastError ??
                  (e.lastStatus ? `answered ${e.lastStatus}` : "")}
              </td>
              <td>
                {e.state === "gave_up"
                  ? <span class="badge badge-bad">gave up</span>
                  : (
                    <span class="badge badge-warn">
                      retrying{" "}
                      {e.nextAttemptAt
                        ? `at ${formatWhen(e.nextAttemptAt)}`
                        : ""}
                    </span>
                  )}
              </td>
              <td>{formatWhen(e.createdAt)}</td>
              <td>
                {e.state === "gave_up" && props.onSendAgain && (
                  <button
                    type="button"
                    class="button small"
                    disabled={props.busy?.has(e.eventId)}
                    onClick={() => props.onSendAgain!(e.eventId)}
                    data-testid={`send-again-${e.eventId}`}
                  >
                    Send again
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {total > items.length && (
        <p class="muted">The oldest {items.length} of {total}.</p>
      )}
    </div>
  );
}
