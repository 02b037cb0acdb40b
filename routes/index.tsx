/** `GET /`: the menu, with a basket beside it. */
import { html } from "../kit/http/render.ts";
import { Layout } from "../components/layout.tsx";
import { MenuCard } from "./_menu_card.tsx";
import { StorefrontNav } from "./_storefront_nav.tsx";
import { Island } from "../islands/_registry.ts";
import { MENU, priceList } from "../services/menu.ts";

/** Renders the menu page; `csrfToken` goes in the page's meta tag. */
export function menuPage(options: { csrfToken?: string } = {}): Response {
  return html(
    <Layout title="Menu" csrfToken={options.csrfToken} nav={<StorefrontNav />}>
      <section class="hero">
        <h1>Fresh from the oven, ready when you are</h1>
        <p>
          Choose today or any later day, then collect at the counter or have it
          brought by bike. Every order is baked to order.
        </p>
      </section>
      <div class="shop">
        <section class="menu" aria-label="Menu">
          {MENU.map((item) => <MenuCard key={item.sku} item={item} />)}
        </section>
        <aside class="shop-side">
          <Island name="cart" props={{ menu: priceList() }} />
        </aside>
      </div>
    </Layout>,
  );
}
