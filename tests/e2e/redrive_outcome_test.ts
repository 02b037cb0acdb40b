/**
 * The README's walkthrough step 5 in the browser, as an operator would try
 * it: the kitchen refuses, an order is placed and paid, and the kitchen's
 * OrderPlaced and OrderPaid die. With the switch off, the operator redrives
 * the kitchen's OrderPaid group first. Its dry run names the OrderPlaced it
 * waits on; sent without it, the page reports it dead again with the
 * kitchen's 409 (not a success); sent with it, both applied and the card
 * confirmed. The report is checked on a phone's width too. The Dead
 * letters toolbar holds back a selection that waits on an earlier dead
 * letter, and shows what each message would do at its receiver.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  byTestId,
  deadLettersShown,
  e2e,
  openConsolePage,
  orderStateIs,
  payWith,
  placeOrder,
  screenshot,
  setFault,
  SETTLE_MS,
  signedInPage,
  toConsole,
  withBrowser,
} from "./_browser.ts";

/**
 * README steps 3 to 5 up to the redrive: with the kitchen refusing, an
 * order placed and paid, its OrderPlaced and OrderPaid dead at the
 * kitchen; then the switch off and the Dead letters page open.
 */
async function kitchenDeadLetters(page: Page, base: string) {
  await setFault(page, "kitchenRefuses", true);
  const orderId = await placeOrder(page, base);
  await orderStateIs(page, "placed");
  await page.getByRole("link", { name: "Pay", exact: true }).click();
  await page.waitForURL(/\/pay$/);
  await payWith(page, "4242 4242 4242 4242");
  await orderStateIs(page, "paid");

  await toConsole(page);
  await openConsolePage(page, "dead-letters");
  const dead = await deadLettersShown(page, 2, 4);
  await setFault(page, "kitchenRefuses", false);
  await openConsolePage(page, "dead-letters");
  return {
    orderId,
    placed: dead.find((d) => d.eventType === "OrderPlaced")!,
    paid: dead.find((d) => d.eventType === "OrderPaid")!,
  };
}

/** The key of the failure group of the kitchen's OrderPaid. */
async function orderPaidGroup(page: Page): Promise<string> {
  const row = page.locator('tr[data-testid^="group-"]', {
    hasText: "OrderPaid",
  });
  await row.waitFor({ timeout: SETTLE_MS });
  const testid = await row.getAttribute("data-testid");
  return testid!.replace(/^group-/, "");
}

/**
 * Waits until the report of a redrive of `count` has settled; returns its
 * figures.
 */
async function settledOutcome(page: Page, count: number) {
  const outcome = page.locator(
    `[data-testid="redrive-outcome"][data-count="${count}"][data-settled="true"]`,
  );
  await outcome.waitFor({ timeout: SETTLE_MS });
  return {
    applied: Number(await outcome.getAttribute("data-applied")),
    deadAgain: Number(await outcome.getAttribute("data-dead-again")),
    retrying: Number(await outcome.getAttribute("data-retrying")),
    tone: await outcome.getAttribute("class"),
    summary: await byTestId(page, "redrive-outcome-summary").textContent(),
  };
}

e2e.test("redrive in the browser: the OrderPaid group first names the OrderPlaced it waits on, and the page says what died again and what was applied", async () => {
  await withBrowser(async ({ browser, base }) => {
    const { page, errors } = await signedInPage(browser, base, "Early shift");
    const { orderId, placed, paid } = await kitchenDeadLetters(page, base);

    // The OrderPaid group: its dry run names the OrderPlaced it waits on.
    const key = await orderPaidGroup(page);
    await byTestId(page, `group-redrive-${key}`).click();
    const waits = byTestId(page, "group-waits-on");
    await waits.waitFor();
    const item = byTestId(page, `group-waits-on-item-${placed.id}`);
    assert.match(await item.textContent() ?? "", /OrderPlaced to Kitchen/);
    assert.equal(
      await page.locator('[data-testid^="group-waits-on-item-"]').count(),
      1,
    );
    assert.equal(
      await byTestId(page, "group-waits-on-include").isChecked(),
      false,
    );
    // And what the OrderPaid would do at the kitchen, tried and rolled
    // back: "not yet", in the kitchen's words.
    const previewed = byTestId(page, `group-preview-${paid.id}`);
    assert.match(await previewed.textContent() ?? "", /not yet.*no card/);
    await screenshot(page, "redrive-waits-on");

    // Sent without it: the page follows it and reports it dead again.
    await byTestId(page, "group-confirm-go").click();
    const first = await settledOutcome(page, 1);
    assert.deepEqual(
      [first.applied, first.deadAgain, first.retrying],
      [0, 1, 0],
    );
    assert.doesNotMatch(first.tone ?? "", /\bok\b/);
    assert.match(
      await byTestId(page, `dead-again-${paid.id}`).textContent() ?? "",
      new RegExp(`Kitchen answered 409\\b.*no card for order ${orderId}`),
    );
    await screenshot(page, "redrive-dead-again");

    // Again, with the earlier message included: both applied, in order.
    const again = await orderPaidGroup(page);
    await byTestId(page, `group-redrive-${again}`).click();
    await byTestId(page, `group-waits-on-item-${placed.id}`).waitFor();
    await byTestId(page, "group-waits-on-include").check();
    assert.equal(
      await byTestId(page, "group-confirm-go").textContent(),
      "Redrive 2 dead letters",
    );
    await byTestId(page, "group-confirm-go").click();
    const second = await settledOutcome(page, 2);
    assert.deepEqual(
      [second.applied, second.deadAgain, second.retrying],
      [2, 0, 0],
    );
    assert.match(second.tone ?? "", /\bok\b/);
    assert.match(second.summary ?? "", /2 applied, 0 dead again/);
    await byTestId(page, "groups-empty").waitFor({ timeout: SETTLE_MS });

    // What the kitchen applied: the card, confirmed.
    const board = await page.evaluate(() =>
      fetch("/api/kitchen/board").then((r) => r.json())
    );
    assert.deepEqual(
      board.cards.map((c: { orderId: string; state: string }) => [
        c.orderId,
        c.state,
      ]),
      [[orderId, "confirmed"]],
    );

    // On a phone the report fits the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    const box = await byTestId(page, "redrive-outcome").boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, String(box));
    await screenshot(page, "redrive-outcome-phone");

    assert.deepEqual(errors, []);
    await page.context().close();
  });
});

e2e.test("redrive in the browser: the toolbar holds back a selection that waits on an earlier dead letter, with each message's preview", async () => {
  await withBrowser(async ({ browser, base }) => {
    const { page, errors } = await signedInPage(browser, base, "Late shift");
    const { placed, paid } = await kitchenDeadLetters(page, base);

    // The OrderPaid alone: held back, with what the kitchen would answer
    // (tried and rolled back) and the OrderPlaced it waits on.
    await byTestId(page, `select-${paid.id}`).check();
    await byTestId(page, "redrive-selected").click();
    const held = byTestId(page, `redrive-preview-${paid.id}`);
    await held.waitFor({ timeout: SETTLE_MS });
    assert.match(await held.textContent() ?? "", /not yet.*no card/);
    await byTestId(page, `redrive-waits-on-item-${placed.id}`).waitFor();
    await byTestId(page, "redrive-waits-on-include").check();
    await byTestId(page, "redrive-waits-go").click();
    const outcome = page.locator(
      '[data-testid="redrive-outcome"][data-count="2"][data-settled="true"]',
    );
    await outcome.waitFor({ timeout: SETTLE_MS });
    assert.equal(await outcome.getAttribute("data-applied"), "2");

    assert.deepEqual(errors, []);
    await page.context().close();
  });
});
