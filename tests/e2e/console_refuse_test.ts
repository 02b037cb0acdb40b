/**
 * Refusing a dead letter in the browser: the refuse form asks for a reason
 * (an empty one is not taken), the row says refused in place and is gone
 * from the list after a reload, the closure counts it as refused, and its
 * delivery page, reached from the closure cell, shows the reason and who
 * refused it.
 */
import assert from "node:assert/strict";
import {
  byTestId,
  deadLettersShown,
  e2e,
  liveIsOpen,
  openConsolePage,
  placeOrder,
  setFault,
  SETTLE_MS,
  toConsole,
  withConsolePage,
} from "./_browser.ts";

const OPERATOR = "Day shift";
// Typed markup must come back as text wherever the reason is shown.
const REASON = "Customer phoned: <b>ordered twice</b>, do not bake";

e2e.test("console in the browser: refuse a dead letter with a reason", async () => {
  await withConsolePage({ operator: OPERATOR }, async ({ page, base }) => {
    await setFault(page, "kitchenRefuses", true);
    // Placed, not paid: the kitchen's OrderPlaced dies after its retries.
    const orderId = await placeOrder(page, base);
    await toConsole(page);
    await openConsolePage(page, "dead-letters");
    const [dead] = await deadLettersShown(page, 1, 4);
    assert.equal(dead.eventType, "OrderPlaced");
    assert.equal(dead.subscriber, "kitchen");
    const row = byTestId(page, `dead-letter-row-${dead.id}`);
    const form = `refuse-form-${dead.id}`;

    // No reason, no refusal.
    await byTestId(page, `refuse-${dead.id}`).click();
    await byTestId(page, `${form}-confirm`).click();
    assert.equal(
      await byTestId(page, `${form}-error`).textContent(),
      "A reason is required.",
    );
    assert.equal(await row.getAttribute("data-state"), "dead");

    await byTestId(page, `${form}-reason`).fill(REASON);
    await byTestId(page, `${form}-confirm`).click();
    await page.locator(
      `[data-testid="dead-letter-row-${dead.id}"][data-state="refused"]`,
    ).waitFor({ timeout: SETTLE_MS });
    assert.match(await row.textContent() ?? "", /ordered twice/);
    assert.match(
      await byTestId(page, "dead-letter-notice").textContent() ?? "",
      /^Refused 1 dead letter\b/,
    );
    assert.equal(await byTestId(page, `${form}-reason`).count(), 0);
    assert.equal(await row.locator("b").count(), 0);

    // Looked at again, the list no longer holds it.
    await page.reload();
    await liveIsOpen(page);
    await byTestId(page, "dead-letters-empty").waitFor();
    assert.equal(await row.count(), 0);

    // The closure counts it as refused, and nothing as dead.
    await openConsolePage(page, "closure");
    await page.waitForFunction(
      () =>
        document.querySelector('[data-testid="closure-total-refused"]')
          ?.getAttribute("data-count") === "1",
      undefined,
      { timeout: SETTLE_MS },
    );
    for (const state of ["dead", "inFlight", "owed"]) {
      assert.equal(
        await byTestId(page, `closure-total-${state}`).getAttribute(
          "data-count",
        ),
        "0",
        state,
      );
    }

    // From the cell to its rows, and from the row to the delivery.
    await byTestId(page, "closure-cell-kitchen-refused").click();
    await page.waitForURL(/\/console\/closure\/rows\?/);
    const item = page.locator('[data-testid^="closure-item-"]');
    assert.equal(await item.count(), 1);
    assert.equal(
      await item.locator(`a[href="/orders/${orderId}"]`).count(),
      1,
    );
    await item.locator(`a[href="/console/deliveries/${dead.id}"]`).click();
    await page.waitForURL(new RegExp(`/console/deliveries/${dead.id}$`));
    await liveIsOpen(page);

    assert.equal(
      await byTestId(page, "delivery-detail").getAttribute("data-state"),
      "refused",
    );
    assert.match(
      await byTestId(page, "refused-reason").textContent() ?? "",
      new RegExp(
        `^by ${OPERATOR} at \\d\\d:\\d\\d:\\d\\d UTC: ${
          REASON.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        }$`,
      ),
    );
    const actions = await page.$$eval(
      '[data-testid^="action-row-"]',
      (rows) =>
        rows.map((r) =>
          [...r.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)
        ),
    );
    assert.deepEqual(actions, [["refuse", OPERATOR, REASON]]);
    // Refused is final: no Redrive or Refuse any more.
    assert.equal(await byTestId(page, "delivery-actions").count(), 0);
    assert.equal(await page.locator("main b").count(), 0);
  });
});
