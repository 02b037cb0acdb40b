/**
 * The labs in the browser: a ledger scenario run by a click shows its
 * figures and the rows it left; the Queue Lab's duplicate ticket appears
 * with a crash and a forgetful printer, and disappears when the printer
 * remembers the ids it has printed.
 */
import assert from "node:assert/strict";
import { byTestId, e2e, screenshot, withConsolePage } from "./_browser.ts";

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
