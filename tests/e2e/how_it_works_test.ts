/**
 * The How it's built page in a real browser: one tab stays on the page
 * while another does the walkthrough (the kitchen refuses, order and pay,
 * the dead letters, the redrives, the closure), and the first tab's Try-it
 * checklist and its costs follow by themselves, without a reload. The page also
 * reads without JavaScript. Screenshots go to tests/artifacts/.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  byTestId,
  deadLettersShown,
  e2e,
  markPage,
  openConsolePage,
  orderStateIs,
  payWith,
  placeOrder,
  screenshot,
  scriptErrors,
  setFault,
  SETTLE_MS,
  signedInPage,
  stillMarked,
  toConsole,
  withBrowser,
} from "./_browser.ts";

/** Waits until the checklist shows `step` ticked. */
async function tickedOn(page: Page, step: string) {
  try {
    await page.locator(`[data-testid="try-it-${step}"][data-done="true"]`)
      .waitFor({ timeout: SETTLE_MS });
  } catch (error) {
    const shown = await page.$$eval(
      '[data-testid^="try-it-"][data-done]',
      (items) =>
        items.map((i) =>
          `${i.getAttribute("data-testid")}=${i.getAttribute("data-done")}`
        ),
    );
    throw new Error(`${(error as Error).message}; shown: ${shown.join(", ")}`);
  }
}

/** The steps the checklist shows ticked, in order. */
const tickedSteps = (page: Page) =>
  page.$$eval(
    '[data-testid^="try-it-"][data-done="true"]',
    (items) =>
      items.map((i) => i.getAttribute("data-testid")!.replace("try-it-", "")),
  );

e2e.test("how it's built in the browser: the Try-it checklist ticks itself as the walkthrough is done in another tab", async () => {
  await withBrowser(async ({ browser, base }) => {
    // Without JavaScript the page still reads: every section is there.
    const plain = await browser.newContext({ javaScriptEnabled: false });
    const reader = await plain.newPage();
    await reader.goto(`${base}how-it-works`);
    assert.equal(
      await reader.locator('section[data-testid^="how-"]').count(),
      7,
    );
    assert.equal(
      await byTestId(reader, "paid-receiver-count").textContent(),
      "6",
    );
    await plain.close();

    const { page: work, errors } = await signedInPage(browser, base, "Baker");
    const context = work.context();

    // The page, reached from the console's header, stays open in a tab.
    const how = await context.newPage();
    const howErrors = scriptErrors(how);
    await how.goto(`${base}console`);
    await openConsolePage(how, "how");
    await tickedOn(how, "signedIn");
    assert.deepEqual(await tickedSteps(how), ["signedIn"]);
    await markPage(how);

    await setFault(work, "kitchenRefuses", true);
    await tickedOn(how, "kitchenRefuses");

    const orderId = await placeOrder(work, base);
    await orderStateIs(work, "placed");
    await work.getByRole("link", { name: "Pay", exact: true }).click();
    await payWith(work, "4242 4242 4242 4242");
    await orderStateIs(work, "paid");
    await tickedOn(how, "orderedAndPaid");

    await toConsole(work);
    await openConsolePage(work, "dead-letters");
    const dead = await deadLettersShown(work, 2, 4);
    const placed = dead.find((d) => d.eventType === "OrderPlaced")!;
    const paid = dead.find((d) => d.eventType === "OrderPaid")!;
    await tickedOn(how, "kitchenDead503");

    await setFault(work, "kitchenRefuses", false);
    await tickedOn(how, "faultOff");

    // OrderPaid first: back with 409.
    await openConsolePage(work, "dead-letters");
    await byTestId(work, `redrive-${paid.id}`).click();
    await tickedOn(how, "paidFirst409");

    // Then OrderPlaced, then OrderPaid.
    await byTestId(work, `redrive-${placed.id}`).click();
    await work.locator(
      `[data-testid="dead-letter-row-${placed.id}"][data-state="redriven"]`,
    ).waitFor({ timeout: SETTLE_MS });
    await openConsolePage(work, "kitchen");
    await work.locator(
      `[data-testid="kitchen-card-${orderId}"][data-state="new"]`,
    ).waitFor({ timeout: SETTLE_MS });
    await openConsolePage(work, "dead-letters");
    await byTestId(work, `redrive-${paid.id}`).click();
    await tickedOn(how, "redrivenInOrder");
    await tickedOn(how, "oneConfirmedCard");
    await tickedOn(how, "nothingOwed");

    assert.deepEqual(await tickedSteps(how), [
      "signedIn",
      "kitchenRefuses",
      "orderedAndPaid",
      "kitchenDead503",
      "faultOff",
      "paidFirst409",
      "redrivenInOrder",
      "oneConfirmedCard",
      "nothingOwed",
    ]);
    assert.equal(
      await byTestId(how, "try-it-progress").getAttribute("data-done"),
      "9",
    );
    // It ticked by itself: the tab was never reloaded.
    assert.ok(await stillMarked(how));

    // The costs followed too: the one paid order, without a reload.
    await how.waitForFunction(
      () =>
        /the 1 paid order of your sandbox/.test(
          document.querySelector('[data-testid="cost-paid-orders"]')
            ?.textContent ?? "",
        ),
      undefined,
      { timeout: SETTLE_MS },
    );
    assert.equal(
      await byTestId(how, "cost-messages-value").textContent(),
      "3",
    );
    assert.ok(await stillMarked(how));
    await screenshot(how, "how-it-works");
    assert.deepEqual(errors, []);
    assert.deepEqual(howErrors, []);
    await context.close();
  });
});
