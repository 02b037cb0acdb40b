/** The "Add to basket" button of one menu item, a stepper once added. */
import { useEffect } from "preact/hooks";
import {
  addOne,
  cart,
  cartReady,
  MAX_QTY,
  setQty,
  startCart,
} from "./_cart_store.ts";

/** Props: which item, and its name for screen readers. */
export interface AddToCartProps {
  sku: string;
  name: string;
}

/** Adds one item to the shared basket; shows how many are in it. */
export default function AddToCart({ sku, name }: AddToCartProps) {
  useEffect(startCart, []);
  const qty = cart.value[sku] ?? 0;
  // Disabled until the basket is read, so that a click before hydration
  // cannot be lost or overwritten by what storage held.
  if (!cartReady.value || qty === 0) {
    return (
      <button
        type="button"
        class="button add"
        disabled={!cartReady.value}
        onClick={() => addOne(sku)}
        // What is read out starts with the words shown, so that a person who
        // says "click Add to basket" finds it (WCAG 2.5.3).
        aria-label={`Add to basket: ${name}`}
      >
        Add to basket
      </button>
    );
  }
  return (
    <div class="stepper" role="group" aria-label={`${name} in basket`}>
      <button
        type="button"
        onClick={() => setQty(sku, qty - 1)}
        aria-label={`One ${name} less`}
      >
        −
      </button>
      <output aria-live="polite">{qty}</output>
      <button
        type="button"
        onClick={() => addOne(sku)}
        disabled={qty >= MAX_QTY}
        aria-label={`One ${name} more`}
      >
        +
      </button>
    </div>
  );
}
