/** `GET /checkout`: the basket and the form that places the order. */
import { html } from "../kit/http/render.ts";
import { Layout } from "../components/layout.tsx";
import { StorefrontNav } from "./_storefront_nav.tsx";
import { Island } from "../islands/_registry.ts";
import { priceList } from "../services/menu.ts";

/** Renders the checkout page; `csrfToken` goes in the page's meta tag. */
export function checkoutPage(options: { csrfToken?: string } = {}): Response {
  const menu = priceList();
  return html(
    <Layout
      title="Checkout"
      csrfToken={options.csrfToken}
      nav={<StorefrontNav />}
    >
      <h1>Checkout</h1>
      <div class="shop checkout">
        <section class="panel" aria-labelledby="details-title">
          <h2 id="details-title">Your details</h2>
          <Island name="checkout_form" props={{ menu }} />
        </section>
        <aside class="shop-side">
          <Island name="cart" props={{ menu, showCheckout: false }} />
        </aside>
      </div>
    </Layout>,
  );
}
