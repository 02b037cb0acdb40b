/**
 * The console's list of payments needing a refund: money taken that no
 * order keeps, with the payment, the order, what was charged and why.
 */
import { formatWhen } from "../format.ts";
import { formatEuros } from "../format.ts";
import type { RefundDue } from "../services/console/refunds.ts";
import { OrderCode } from "./_order_code.tsx";

/** What was charged: euros as the storefront writes them, else the code. */
function charged(cents: number, currency: string | null): string {
  if (currency === null || currency === "eur") return formatEuros(cents);
  return `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;
}

/** The table, or a line saying there is nothing to refund. */
export function RefundsDue(
  props: { refunds: { total: number; items: RefundDue[] } },
) {
  const { total, items } = props.refunds;
  if (items.length === 0) {
    return (
      <p class="muted" data-testid="no-refunds">
        No payment needs a refund.
      </p>
    );
  }
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid="refunds-due">
        <thead>
          <tr>
            <th>Payment</th>
            <th>Order</th>
            <th class="num">Charged</th>
            <th>Why</th>
            <th>Kept by</th>
            <th>Since</th>
          </tr>
        </thead>
        <tbody>
          {items.map((r) => (
            <tr key={`${r.keptBy}/${r.paymentId}`}>
              <td>
                <code>{r.paymentId}</code>
              </td>
              <td>
                <OrderCode id={r.orderId} />
              </td>
              <td class="num">
                <span class="badge badge-bad">
                  {charged(r.amountCents, r.currency)}
                </span>
              </td>
              <td class="error-text">{r.reason}</td>
              <td>{r.keptBy}</td>
              <td>{formatWhen(r.at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {total > items.length && (
        <p class="muted">
          The newest {items.length} of {total}.
        </p>
      )}
    </div>
  );
}
