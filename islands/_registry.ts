/**
 * Every island, by the name its markup carries. The client bundle hydrates
 * from this table, and pages render islands through `Island`, which accepts
 * only these names with their props.
 */
import { createIsland, type IslandRegistry } from "../lib/http/islands.ts";
import AddToCart from "./add_to_cart.tsx";
import BasketLink from "./basket_link.tsx";
import Cart from "./cart.tsx";
import CheckoutForm from "./checkout_form.tsx";
import OrderTimeline from "./order_timeline.tsx";
import PayForm from "./pay_form.tsx";

/** The island components by name. */
export const islands = {
  add_to_cart: AddToCart,
  basket_link: BasketLink,
  cart: Cart,
  checkout_form: CheckoutForm,
  order_timeline: OrderTimeline,
  pay_form: PayForm,
} satisfies IslandRegistry;

/**
 * Renders an island on the server and marks it for hydration.
 *
 * @example
 * ```tsx
 * <Island name="cart" props={{ menu }} />;
 * ```
 */
export const Island = /* @__PURE__ */ createIsland(islands);
