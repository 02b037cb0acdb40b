/** The basket: lines with quantities, the total, and the way to checkout. */
import { useEffect } from "preact/hooks";
import {
  cartLines,
  cartReady,
  cartTotalCents,
  type CatalogItem,
  MAX_QTY,
  setQty,
  startCart,
} from "./_cart_store.ts";
import { formatEuros } from "../format.ts";

/** Props: the menu (for names and prices) and where the basket is shown. */
export interface CartProps {
  menu: CatalogItem[];
  /** Show the "Go to checkout" link; off on the checkout page itself. */
  showCheckout?: boolean;
}

/** Shows and edits the shared basket. */
export default function Cart({ menu, showCheckout = true }: CartProps) {
  useEffect(startCart, []);
  const byId = new Map(menu.map((item) => [item.sku, item]));
  const lines = cartLines(menu);
  const total = cartTotalCents(menu);

  return (
    <section class="cart" aria-labelledby="cart-title">
      <h2 id="cart-title">Your basket</h2>
      {!cartReady.value
        ? <p class="muted" aria-busy="true">Looking in your basket…</p>
        : lines.length === 0
        ? (
          <p class="muted">
            Empty for now. Everything is baked the morning you collect it.
          </p>
        )
        : (
          <ul class="cart-lines">
            {lines.map(({ sku, qty }) => {
              const item = byId.get(sku)!;
              return (
                <li key={sku}>
                  <span class="cart-name">{item.name}</span>
                  <span class="stepper small">
                    <button
                      type="button"
                      onClick={() => setQty(sku, qty - 1)}
                      aria-label={`One ${item.name} less`}
                    >
                      −
                    </button>
                    <output>{qty}</output>
                    <button
                      type="button"
                      onClick={() => setQty(sku, qty + 1)}
                      disabled={qty >= MAX_QTY}
                      aria-label={`One ${item.name} more`}
                    >
                      +
                    </button>
                  </span>
                  <span class="cart-amount">
                    {formatEuros(qty * item.priceCents)}
                  </span>
                </li>
              );
            })}
          </ul>
        )}
      <p class="cart-total">
        <span>Total</span>
        <strong data-testid="cart-total">{formatEuros(total)}</strong>
      </p>
      {showCheckout && (
        <a
          class={lines.length
            ? "button primary wide"
            : "button primary wide disabled"}
          href="/checkout"
          aria-disabled={lines.length ? undefined : "true"}
        >
          Go to checkout
        </a>
      )}
    </section>
  );
}
