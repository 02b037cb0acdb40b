/** The header's link to the checkout, with the number of items in the basket. */
import { useEffect } from "preact/hooks";
import { cartCount, cartReady, startCart } from "./_cart_store.ts";

/** Links to the checkout and counts the basket. No props. */
export default function BasketLink(_props: Record<string, never>) {
  useEffect(startCart, []);
  const count = cartReady.value ? cartCount.value : 0;
  return (
    <a href="/checkout" class="basket-link">
      Basket
      {count > 0 && (
        <span class="count" aria-label={`${count} items`}>{count}</span>
      )}
    </a>
  );
}
