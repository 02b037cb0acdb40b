/**
 * The obligations behind one cell of the closure matrix, live. Twin of
 * `GET /api/console/closure/rows?subscriber=&state=`.
 */
import { formatWhen } from "../format.ts";
import { useLive } from "./_live.ts";
import type { ClosureRowsData, ClosureState } from "./_console_types.ts";
import { MessageId, OrderCode } from "./_order_code.tsx";

/** Props: the cell (receiver and state) and the server's render. */
export interface ClosureRowsProps {
  subscriber: string;
  state: ClosureState;
  initial: ClosureRowsData;
}

/** One row per obligation: message, order, where it is, and since when. */
export default function ClosureRows(props: ClosureRowsProps) {
  const live = useLive(
    `/api/console/closure/rows?subscriber=${
      encodeURIComponent(props.subscriber)
    }&state=${props.state}`,
    props.initial,
  );
  const items = live.data.value.items;
  if (items.length === 0) {
    return (
      <p class="muted panel" data-testid="closure-rows-empty">
        No obligation is in this state.
      </p>
    );
  }
  return (
    <div class="table-wrap" tabIndex={0}>
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <table class="table" data-testid="closure-rows">
        <thead>
          <tr>
            <th>Message</th>
            <th>Event type</th>
            <th>Order</th>
            <th>Delivery</th>
            <th>Where it is</th>
            <th>Since</th>
          </tr>
        </thead>
        <tbody>
          {items.map((r) => (
            <tr
              key={`${r.messageId}/${r.deliveryId}`}
              data-testid={`closure-item-${r.messageId}`}
            >
              <td>
                <MessageId id={r.messageId} />
              </td>
              <td>{r.eventType}</td>
              <td>
                <OrderCode id={r.orderId} />
              </td>
              <td>
                {r.deliveryId === null
                  ? <span class="muted">{r.sender} outbox</span>
                  : (
                    <a href={`/console/deliveries/${r.deliveryId}`}>
                      {r.deliveryId}
                    </a>
                  )}
              </td>
              <td class="error-text">{r.detail}</td>
              <td>{formatWhen(r.at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
