/**
 * Sequences that hold, and the workers, as an operator sees them: with
 * "Kitchen keeps each order's sequence" on and the kitchen refusing, the
 * Deliveries page's Held tab shows the order's OrderPaid "behind" its dead
 * OrderPlaced, linked to it, and the delivery's own page says the same.
 * The Workers page lists this process, live. Both pages are saved as
 * screenshots for docs/console.md.
 */
import {
  byTestId,
  liveIsOpen,
  orderStateIs,
  payWith,
  placeOrder,
  screenshot,
  setFault,
  SETTLE_MS,
  withConsolePage,
} from "./_browser.ts";
import assert from "node:assert/strict";

Deno.test("sequences: the held OrderPaid shows behind its dead OrderPlaced; the Workers page lists this process", async () => {
  await withConsolePage(
    { operator: "Sequence shift" },
    async ({ page, base }) => {
      await setFault(page, "kitchenKeepsOrder", true);
      await setFault(page, "kitchenRefuses", true);
      await placeOrder(page, base);
      await orderStateIs(page, "placed");
      await page.getByRole("link", { name: "Pay", exact: true }).click();
      await payWith(page, "4242 4242 4242 4242");
      await orderStateIs(page, "paid");

      await page.goto(`${base}console/deliveries?state=held`);
      await liveIsOpen(page);
      const held = page.locator('tr[data-state="held"]');
      await held.waitFor({ timeout: SETTLE_MS });
      assert.match(await held.textContent() ?? "", /OrderPaid/);
      const behind = held.getByTestId("held-behind").getByRole("link");
      const target = await behind.getAttribute("href");
      assert.match(target ?? "", /^\/console\/deliveries\/\d+$/);
      await screenshot(page, "console-deliveries-held");

      // The earlier one is the order's dead OrderPlaced.
      await behind.click();
      await page.waitForURL((url) => url.pathname === target);
      await byTestId(page, "delivery-detail").waitFor();
      assert.equal(
        await byTestId(page, "delivery-detail").getAttribute("data-state"),
        "dead",
      );
      assert.match(
        await byTestId(page, "delivery-detail").textContent() ?? "",
        /OrderPlaced/,
      );

      await page.goto(`${base}console/workers`);
      await liveIsOpen(page);
      await page.getByText(String(Deno.pid)).first().waitFor();
      await screenshot(page, "console-workers");
    },
  );
});
