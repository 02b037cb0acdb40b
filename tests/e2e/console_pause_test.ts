/**
 * Pausing a receiver in the browser: the kitchen paused on the faults page,
 * an order's kitchen delivery waits unattempted on the order page while the
 * other receivers are done, the closure counts it in flight, the pause
 * survives a reload, and once resumed the delivery is done.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  byTestId,
  e2e,
  liveIsOpen,
  openConsolePage,
  placeOrder,
  SETTLE_MS,
  toConsole,
  withConsolePage,
} from "./_browser.ts";

/** Presses the receiver's pause button and waits for the server's answer. */
async function press(page: Page, name: string, want: "paused" | "running") {
  await byTestId(page, `pause-${name}`).click();
  await page.locator(
    `[data-testid="pause-state-${name}"]:text-is("${want}")`,
  ).waitFor({ timeout: SETTLE_MS });
  await page.waitForFunction(
    (id) =>
      !document.querySelector<HTMLButtonElement>(`[data-testid="${id}"]`)
        ?.disabled,
    `pause-${name}`,
    { timeout: SETTLE_MS },
  );
}

/** Waits until the order page shows `subscriber`'s delivery in `state`. */
function receiverIs(page: Page, subscriber: string, state: string) {
  return page.locator(
    `li.receiver[data-subscriber="${subscriber}"][data-state="${state}"]`,
  ).waitFor({ timeout: SETTLE_MS });
}

/** Waits until the closure page's total of `state` reads `count`. */
function closureTotal(page: Page, state: string, count: number) {
  return page.waitForFunction(
    ([id, n]) =>
      document.querySelector(`[data-testid="${id}"]`)
        ?.getAttribute("data-count") === n,
    [`closure-total-${state}`, String(count)] as const,
    { timeout: SETTLE_MS },
  );
}

e2e.test("console in the browser: pause the kitchen, see its delivery wait, resume it and see it done", async () => {
  await withConsolePage({ operator: "Night shift" }, async ({ page, base }) => {
    await openConsolePage(page, "faults");
    assert.equal(
      await byTestId(page, "pause-kitchen").textContent(),
      "Pause Kitchen",
    );
    await press(page, "kitchen", "paused");
    assert.equal(
      await byTestId(page, "pause-kitchen").textContent(),
      "Resume Kitchen",
    );

    const orderId = await placeOrder(page, base);
    await receiverIs(page, "schedule", "done");
    await receiverIs(page, "customers", "done");
    await receiverIs(page, "kitchen", "pending");
    const kitchen = page.locator('li.receiver[data-subscriber="kitchen"]');
    assert.match(await kitchen.textContent() ?? "", /no attempt yet/);

    await toConsole(page);
    await openConsolePage(page, "closure");
    await closureTotal(page, "inFlight", 1);
    await closureTotal(page, "dead", 0);

    // Still paused when the page is rendered again.
    await openConsolePage(page, "faults");
    assert.equal(
      await byTestId(page, "pause-state-kitchen").textContent(),
      "paused",
    );
    await press(page, "kitchen", "running");

    await page.goto(`${base}orders/${orderId}`);
    await receiverIs(page, "kitchen", "done");
    await toConsole(page);
    await openConsolePage(page, "closure");
    await closureTotal(page, "inFlight", 0);
    await liveIsOpen(page);
  });
});
