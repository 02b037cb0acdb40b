/**
 * The order violations, live: newest first, each with the receiver, the
 * order, the message and both versions. Twin of
 * `GET /api/console/order-violations`.
 */
import { formatWhen, serviceLabel } from "../format.ts";
import { useLive } from "./_live.ts";
import type { OrderViolations } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";

/** Props: the server's render of the twin. */
export interface OrderViolationsListProps {
  initial: OrderViolations;
}

/** The table, or a line saying there is nothing out of order. */
export default function OrderViolationsList(props: OrderViolationsListProps) {
  const live = useLive("/api/console/order-violations", props.initial);
  const { total, items } = live.data.value;
  if (total === 0) {
    return (
      <p class="muted" data-testid="no-order-violations">
        No message arrived after a later version of its order.
      </p>
    );
  }
  return (
    <section class="panel" aria-labelledby="violations-title">
      <h2 id="violations-title" data-testid="order-violations-total">
        {total === 1 ? "1 violation" : `${total} violations`}
        {items.length < total && `, the newest ${items.length}`}
      </h2>
      <div class="table-wrap" tabIndex={0}>
        <table class="table" data-testid="order-violations">
          <thead>
            <tr>
              <th>Receiver</th>
              <th>Order</th>
              <th>Message</th>
              <th>Event type</th>
              <th class="num">Arrived</th>
              <th class="num">Already applied</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {items.map((v) => (
              <tr key={v.messageId} data-testid={`violation-${v.messageId}`}>
                <td>{serviceLabel(v.subscriber)}</td>
                <td>
                  <OrderCode id={v.aggregateId} />
                </td>
                <td>
                  <code title={v.messageId}>{v.messageId}</code>
                </td>
                <td>{v.eventType}</td>
                <td class="num">v{v.arrivedVersion}</td>
                <td class="num">v{v.appliedVersion}</td>
                <td>{formatWhen(v.at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
