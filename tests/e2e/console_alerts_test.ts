/**
 * The alerts banner in the browser: on a console page that has nothing to do
 * with dead letters, a dead letter's alert appears without a reload, is on
 * every other console page as it is rendered (the overview and the
 * receivers page are kept as screenshots, with their charts), turns to
 * recovering once the dead letter is redriven (the kitchen paused, so the
 * redrive is in flight), to resolved once it is applied, again without a
 * reload, and is acknowledged, which the operator log keeps.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { walkthroughOrder } from "../_app.ts";
import {
  byTestId,
  e2e,
  liveIsOpen,
  markPage,
  screenshot,
  SETTLE_MS,
  stillMarked,
  withConsolePage,
} from "./_browser.ts";

/** A same-origin JSON request from the page (the browser sends Origin). */
async function call(
  page: Page,
  method: string,
  path: string,
  body: unknown,
): Promise<number> {
  return await page.evaluate(
    async ([method, path, body]) =>
      (await fetch(path as string, {
        method: method as string,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })).status,
    [method, path, body] as const,
  );
}

const ALERT = '[data-testid="alert-dead_letters-kitchen"]';

e2e.test("console in the browser: the alert banner appears and clears, live", async () => {
  await withConsolePage({
    operator: "Night shift",
    path: "console/closure",
  }, async ({ page, base }) => {
    const banner = byTestId(page, "alert-banner");
    assert.equal(await banner.getAttribute("data-count"), "0");
    assert.equal(await page.locator(ALERT).count(), 0);
    await markPage(page);

    // The kitchen refuses; an order's OrderPlaced dies there.
    assert.equal(
      await call(page, "PUT", "/api/console/faults", { kitchenRefuses: true }),
      200,
    );
    assert.equal(
      await call(page, "POST", "/api/orders", walkthroughOrder()),
      201,
    );
    await page.locator(ALERT).waitFor({ timeout: SETTLE_MS });
    assert.ok(await stillMarked(page), "the page was reloaded");
    assert.match(
      await page.locator(ALERT).textContent() ?? "",
      /^Firing Kitchen: 1 dead letter \(alert from 1\), since \d\d:\d\d:\d\d UTC\. See the dead letters Acknowledge$/,
    );
    assert.equal(
      await page.locator(`${ALERT} a`).getAttribute("href"),
      "/console/dead-letters?subscriber=kitchen",
    );

    // Every console page opens with it: the overview and the receivers
    // page with their charts (kept as screenshots), the kitchen board.
    for (
      const [path, shot] of [["console", "console-overview-alert"], [
        "console/receivers",
        "console-receivers-alert",
      ], ["console/kitchen", ""]]
    ) {
      await page.goto(`${base}${path}`);
      await liveIsOpen(page);
      assert.equal(await page.locator(ALERT).count(), 1, path);
      if (shot) {
        await page.locator(".chart-box-minutes .uplot").first().waitFor();
        await screenshot(page, shot);
      }
    }
    await markPage(page);

    // Redriven with the kitchen back but paused: the redrive is in flight,
    // so the alert recovers; resumed, it is applied, and the alert resolves.
    assert.equal(
      await call(page, "PUT", "/api/console/faults", {
        kitchenRefuses: false,
      }),
      200,
    );
    assert.equal(
      await call(page, "PUT", "/api/console/receivers/kitchen", {
        paused: true,
      }),
      200,
    );
    assert.equal(
      await call(page, "POST", "/api/console/dead-letters/redrive", {
        subscriber: "kitchen",
      }),
      202,
    );
    await page.locator(`${ALERT}[data-state="recovering"]`).waitFor({
      timeout: SETTLE_MS,
    });
    assert.equal(await banner.getAttribute("data-count"), "1");
    assert.equal(
      await call(page, "PUT", "/api/console/receivers/kitchen", {
        paused: false,
      }),
      200,
    );
    await page.locator(`${ALERT}[data-state="resolved"]`).waitFor({
      timeout: SETTLE_MS,
    });
    assert.equal(await banner.getAttribute("data-count"), "0");
    assert.ok(await stillMarked(page), "the page was reloaded");

    // Acknowledged once resolved: it leaves the banner, and the operator
    // log keeps who did it.
    await byTestId(page, "acknowledge-dead_letters-kitchen").click();
    await page.locator(ALERT).waitFor({
      state: "detached",
      timeout: SETTLE_MS,
    });
    await page.goto(`${base}console/actions`);
    await byTestId(page, "action-acknowledge").waitFor();
    assert.match(
      await byTestId(page, "action-acknowledge").textContent() ?? "",
      /Night shiftAcknowledge an alertalert: dead_letters · state: resolved · subject: kitchen1$/,
    );
  });
});
