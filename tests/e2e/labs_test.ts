/**
 * The labs in the browser: a ledger scenario run by a click shows its
 * figures and the rows it left; the Queue Lab's duplicate ticket appears
 * with a crash and a forgetful printer, and disappears when the printer
 * remembers the ids it has printed.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { byTestId, e2e, screenshot, withConsolePage } from "./_browser.ts";

/**
 * What the Queue Lab's timeline draws wrong, in words: a number wider than
 * its box, a box or a crash's cross past the end of the time axis, two
 * boxes of a lane over each other, an axis with fewer than two ticks.
 */
function timelineMisfits(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const axis = document.querySelector(
      '[data-testid="queue-timeline-axis"] .qt-axis-line',
    )!.getBoundingClientRect();
    const boxes: DOMRect[] = [];
    for (const entry of document.querySelectorAll(".qt-entry")) {
      const box = entry.querySelector(".qt-box")!.getBoundingClientRect();
      for (const other of boxes) {
        const apart = other.bottom <= box.top || box.bottom <= other.top ||
          other.right <= box.left || box.right <= other.left;
        if (!apart) found.push(`order ${entry.textContent}: boxes overlap`);
      }
      boxes.push(box);
      const order = entry.querySelector(".qt-order")!;
      const text = order.getBoundingClientRect();
      const name = `order ${order.textContent}`;
      if (text.left < box.left || text.right > box.right) {
        found.push(`${name}: its number is wider than its box`);
      }
      const cross = entry.querySelector(".qt-cross")?.getBoundingClientRect();
      const end = Math.max(box.right, cross?.right ?? 0);
      if (end > axis.right + 0.5) {
        found.push(`${name}: ends ${end - axis.right} px past the axis`);
      }
    }
    const ticks = document.querySelectorAll(".qt-tick").length;
    if (ticks < 2) found.push(`the axis has ${ticks} tick(s)`);
    return found;
  });
}

e2e.test("labs in the browser: a ledger scenario by a click, and the queue lab's duplicate with and without the printer's record", async () => {
  await withConsolePage({
    operator: "Ada",
    path: "labs/ledger",
  }, async ({ page, base }) => {
    await byTestId(page, "run-lost-ack").click();
    await page.waitForURL(/\/labs\/ledger\?ran=lost-ack/);
    const figures = await byTestId(page, "ledger-figures").textContent();
    assert.match(
      (figures ?? "").replace(/\s+/g, " "),
      /Sender: 1 order\(s\), 1 pending\. Receiver: 1 accepted in its inbox, 1 job\(s\), 0 refusal\(s\)\./,
    );
    assert.match(
      await byTestId(page, "rows-outbox").textContent() ?? "",
      /pending.*answer never reached the relay/,
    );
    await screenshot(page, "labs-ledger-lost-ack");

    await page.goto(`${base}labs/queue`);
    await page.locator('input[name="orders"]').fill("4");
    await page.locator('input[name="workers"]').fill("3");
    await page.locator('input[name="poisonOrders"]').fill("0");
    await byTestId(page, "queue-crash").check();
    await byTestId(page, "queue-remembers").uncheck();
    await byTestId(page, "queue-run").click();
    await byTestId(page, "queue-result").waitFor();
    assert.equal(await byTestId(page, "queue-duplicates").textContent(), "1");
    assert.equal(await page.locator('[data-kind="duplicate"]').count(), 1);
    assert.equal(await page.locator('[data-kind="crash"]').count(), 1);
    assert.deepEqual(await timelineMisfits(page), []);
    await screenshot(page, "labs-queue-duplicate");

    // The form keeps the last run's settings: flip the printer's record.
    await byTestId(page, "queue-remembers").check();
    await byTestId(page, "queue-run").click();
    await page.locator('[data-kind="remembered"]').waitFor();
    assert.equal(await byTestId(page, "queue-duplicates").textContent(), "0");
    assert.equal(await page.locator('[data-kind="duplicate"]').count(), 0);
    assert.equal(await byTestId(page, "queue-tickets").textContent(), "4");
    await screenshot(page, "labs-queue-remembered");
  });
});
