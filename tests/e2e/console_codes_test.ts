/**
 * Orders are named in the console as customers name them: three orders
 * placed within one second, whose ids share their time prefix, show three
 * different codes in Dead letters and in Deliveries, each the code on the
 * customer's page, with the full id on hover and on a copy button.
 */
import assert from "node:assert/strict";
import { walkthroughOrder } from "../_app.ts";
import {
  deadLettersShown,
  e2e,
  liveIsOpen,
  SETTLE_MS,
  withConsolePage,
} from "./_browser.ts";

/** The codes in the order cells of the rows matching `rows`. */
function codesIn(page: import("playwright-core").Page, rows: string) {
  return page.$$eval(`${rows} code.order-code`, (codes) =>
    codes.map((c) => ({
      text: c.textContent ?? "",
      title: c.getAttribute("title") ?? "",
      copy: c.closest(".id-with-copy")?.querySelector("button[data-copy]")
        ?.getAttribute("data-copy") ?? "",
    })));
}

e2e.test("console in the browser: three orders of one second have three codes", async () => {
  await withConsolePage({ operator: "Codes" }, async ({ page, base }) => {
    const ids = await page.evaluate(async (orders) => {
      const csrf = document.querySelector('meta[name="csrf-token"]')
        ?.getAttribute("content") ?? "";
      const put = await fetch("/api/console/faults", {
        method: "PUT",
        headers: { "content-type": "application/json", "x-csrf-token": csrf },
        body: JSON.stringify({ kitchenRefuses: true }),
      });
      if (!put.ok) throw new Error(`faults: ${put.status}`);
      // At once: the three ids share their first 8 digits (the time).
      const answers = await Promise.all(orders.map((o) =>
        fetch("/api/orders", {
          method: "POST",
          headers: { "content-type": "application/json", "x-csrf-token": csrf },
          body: JSON.stringify(o),
        }).then((r) => r.json())
      ));
      return answers.map((a) => a.orderId as string);
    }, [walkthroughOrder(), walkthroughOrder(), walkthroughOrder()]);
    const want = ids.map((id) => id.slice(-6).toUpperCase()).sort();
    assert.equal(new Set(want).size, 3, `codes of ${ids.join(", ")}`);

    await page.goto(`${base}console/dead-letters`);
    await liveIsOpen(page);
    await deadLettersShown(page, 3, 4);
    const dead = await codesIn(page, 'tr[data-testid^="dead-letter-row-"]');
    assert.deepEqual(dead.map((c) => c.text).sort(), want);
    for (const c of dead) {
      const id = ids.find((i) => i.slice(-6).toUpperCase() === c.text)!;
      assert.equal(c.title, `Order ${id}`);
      assert.equal(c.copy, id);
    }

    await page.goto(`${base}console/deliveries?state=dead`);
    await liveIsOpen(page);
    await page.locator('tr[data-testid^="delivery-row-"]').nth(2).waitFor({
      timeout: SETTLE_MS,
    });
    const shown = await codesIn(page, 'tr[data-testid^="delivery-row-"]');
    assert.deepEqual([...new Set(shown.map((c) => c.text))].sort(), want);
  });
});
