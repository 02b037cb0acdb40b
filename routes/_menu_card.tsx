/** One item of the menu as a card: drawing, name, story, price, button. */
import type { MenuItem } from "../services/menu.ts";
import { Island } from "../islands/_registry.ts";
import { formatEuros } from "../format.ts";

/** Renders a menu item with its add-to-basket island. */
export function MenuCard({ item }: { item: MenuItem }) {
  return (
    <article class="menu-card" id={item.sku}>
      {/* The drawing is markup written in services/menu.ts, not user input. */}
      <div class="menu-icon" dangerouslySetInnerHTML={{ __html: item.icon }} />
      <div class="menu-text">
        <h3>{item.name}</h3>
        <p>{item.description}</p>
        <p class="menu-meta">
          <span class="price">{formatEuros(item.priceCents)}</span>
          <span class="muted">{item.dailyCapacity} baked a day</span>
        </p>
      </div>
      <Island name="add_to_cart" props={{ sku: item.sku, name: item.name }} />
    </article>
  );
}
