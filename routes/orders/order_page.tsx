/**
 * `GET /orders/:orderId`: one order's page. The server renders the order as
 * it is now; the `order_timeline` island keeps its state, receipt and
 * timeline current while the payment and the deliveries go on.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { Layout } from "../../components/layout.tsx";
import { StorefrontNav } from "../_storefront_nav.tsx";
import {
  formatDay,
  orderNumber,
  OrderSummary,
} from "../../components/order_summary.tsx";
import { Island } from "../../islands/_registry.ts";
import { LABELS, ROUTING } from "../../services/routing.ts";
import { loadOrder, noStore } from "./_order.ts";

/** How the timeline names each service, senders included. */
const SERVICE_LABELS = { ...LABELS, billing: "Billing" };

/** Renders the order's page; 401 without a session, 404 if not theirs. */
export async function orderPage(c: Context, deps: Deps): Promise<Response> {
  const { view, csrfToken } = await loadOrder(c, deps);
  // An operator (signed in by name) reads the console's times: UTC.
  const operator = Boolean(c.get("session")?.name);
  // Set by the pay form: the version the order had when the card was sent.
  const awaiting = Number(c.req.query("awaiting") ?? "");
  const number = orderNumber(view.orderId);
  return noStore(html(
    <Layout
      title={`Order ${number}`}
      csrfToken={csrfToken}
      nav={<StorefrontNav />}
    >
      <header class="order-head">
        <h1>
          Order <span class="order-number">{number}</span>
        </h1>
        <p class="muted">
          Placed on {formatDay(view.createdAt)} · order id{" "}
          <code>{view.orderId}</code>
        </p>
      </header>
      <div class="order-layout">
        <div class="order-main">
          <Island
            name="order_timeline"
            props={{
              view,
              routing: ROUTING,
              labels: SERVICE_LABELS,
              awaitingVersion: Number.isSafeInteger(awaiting) && awaiting > 0
                ? awaiting
                : null,
              utc: operator,
            }}
          />
        </div>
        <aside class="order-side">
          <OrderSummary view={view} />
        </aside>
      </div>
    </Layout>,
  ));
}
