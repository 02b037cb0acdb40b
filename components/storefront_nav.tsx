/** The storefront's header links: the menu, the basket and the console. */
import { Island } from "../islands/_registry.ts";

/** Header links for storefront pages. */
export function StorefrontNav() {
  return (
    <>
      <a href="/">Menu</a>
      <Island name="basket_link" props={{}} />
      <a href="/console">Console</a>
    </>
  );
}
