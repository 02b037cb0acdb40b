/**
 * The storefront's header links: the menu, the basket, how the bakery is
 * built, and the console.
 */
import { Island } from "../islands/_registry.ts";

/** Header links for storefront pages. */
export function StorefrontNav() {
  return (
    <>
      <a href="/">Menu</a>
      <Island name="basket_link" props={{}} />
      <a href="/how-it-works">How it's built</a>
      <a href="/console">Console</a>
    </>
  );
}
