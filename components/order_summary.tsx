/**
 * What was ordered, for whom, how and when: the side panel of the order and
 * pay pages. Server-only; none of it changes once the order is placed.
 */
import type { OrderView } from "../services/timeline.ts";
import { formatEuros, orderCode } from "../format.ts";

const WEEKDAYS = [
  "Sunday",
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/**
 * A calendar day (`2026-11-30`) as people read it: `Monday 30 November
 * 2026`. Read as UTC, so the day never shifts with the server's zone.
 */
export function formatDay(day: string): string {
  const date = new Date(`${day.slice(0, 10)}T12:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return `${WEEKDAYS[date.getUTCDay()]} ${date.getUTCDate()} ${
    MONTHS[date.getUTCMonth()]
  } ${date.getUTCFullYear()}`;
}

/**
 * The short number people quote: the last 6 hex digits of the order id,
 * upper case, the same that ends the receipt's number.
 *
 * @example
 * ```ts
 * orderNumber("01a22a9b-552c-77bf-8b34-aa367361b797"); // "61B797"
 * ```
 */
export function orderNumber(orderId: string): string {
  return orderCode(orderId);
}

/** The lines, the total, the customer, pickup or delivery, and the day. */
export function OrderSummary({ view }: { view: OrderView }) {
  const delivery = view.fulfilment === "delivery";
  return (
    <section class="panel order-summary" aria-labelledby="summary-title">
      <h2 id="summary-title">Your order</h2>
      <ul class="summary-lines">
        {view.lines.map((line) => (
          <li key={line.sku}>
            <span class="summary-qty">{line.qty} ×</span>
            <span>{line.name}</span>
            <span class="num">{formatEuros(line.qty * line.unitCents)}</span>
          </li>
        ))}
      </ul>
      <p class="cart-total">
        <span>Total</span>
        <strong data-testid="order-total">
          {formatEuros(view.totalCents)}
        </strong>
      </p>
      <dl class="facts">
        <dt>For</dt>
        <dd>
          {view.customer.name}
          <br />
          <span class="muted">{view.customer.email}</span>
        </dd>
        <dt>{delivery ? "Delivery" : "Pickup"}</dt>
        <dd>
          {delivery
            ? "By bike, in the morning"
            : "From the counter, 7:00 to 14:00"}
        </dd>
        <dt>Day</dt>
        <dd>{formatDay(view.day)}</dd>
      </dl>
    </section>
  );
}
