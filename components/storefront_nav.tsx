/** The storefront's header links: the menu and the basket. */
import { Island } from "../islands/_registry.ts";

/** Header links for storefront pages. */
export function StorefrontNav() {
  return (
    <>
      <a href="/">Menu</a>
      <Island name="basket_link" props={{}} />
    </>
  );
}
