/**
 * `GET /orders/:orderId/pay`: paying for an order. Without Stripe keys this
 * is the bakery's own test checkout, which says so and lists the test cards;
 * with keys, a button that goes on to Stripe Checkout. An order that can no
 * longer be paid sends the visitor back to its page.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { Layout } from "../../components/layout.tsx";
import { StorefrontNav } from "../_storefront_nav.tsx";
import { orderNumber, OrderSummary } from "../../components/order_summary.tsx";
import { Island } from "../../islands/_registry.ts";
import { formatEuros } from "../../format.ts";
import { OPEN_STATES, type OrderState } from "../../services/orders/states.ts";
import { loadOrder, noStore } from "./_order.ts";

/** Renders the pay page, or redirects (303) when the order is not open. */
export async function payPage(c: Context, deps: Deps): Promise<Response> {
  const { view, csrfToken } = await loadOrder(c, deps);
  const orderUrl = `/orders/${view.orderId}`;
  if (!OPEN_STATES.includes(view.state as OrderState)) {
    return noStore(c.redirect(orderUrl, 303));
  }
  const number = orderNumber(view.orderId);
  const mode = deps.gateway.mode;
  return noStore(html(
    <Layout
      title={`Pay for order ${number}`}
      csrfToken={csrfToken}
      nav={<StorefrontNav />}
    >
      <header class="order-head">
        <h1>
          Pay for order <span class="order-number">{number}</span>
        </h1>
        <p class="muted">
          <a href={orderUrl}>Back to the order</a>
        </p>
      </header>
      <div class="order-layout">
        <section class="panel pay-panel" aria-labelledby="pay-title">
          {mode === "test" && (
            <div class="test-banner" role="note">
              <strong>Test checkout</strong>
              <span>
                No real card is charged. This bakery runs without Stripe keys,
                so this page stands in for Stripe Checkout; the result still
                reaches the bakery as a Stripe-signed webhook.
              </span>
            </div>
          )}
          <h2 id="pay-title" class="pay-amount">
            <span>Amount to pay</span>
            <strong data-testid="pay-amount">
              {formatEuros(view.totalCents)}
            </strong>
          </h2>
          {view.state === "payment_failed" && (
            <p class="form-error">
              The last card was declined and nothing was charged. Try again,
              with another card if need be.
            </p>
          )}
          {mode === "stripe" && (
            <p class="muted">
              You pay on Stripe's own page and come back here when it is done.
            </p>
          )}
          <Island
            name="pay_form"
            props={{
              orderId: view.orderId,
              amountCents: view.totalCents,
              version: view.version,
              mode,
            }}
          />
        </section>
        <aside class="order-side">
          <OrderSummary view={view} />
        </aside>
      </div>
    </Layout>,
  ));
}
