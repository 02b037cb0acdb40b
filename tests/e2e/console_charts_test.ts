/**
 * The receivers' charts in the browser: after a paid order, each receiver's
 * last hour is a uPlot chart with its three axes (time, done per minute,
 * p95 in ms), it shows a minute's figures in its legend when the pointer
 * is over that minute, and it fits its box at 390 and 1280 px. Kept as
 * screenshots (tests/artifacts/console-receivers-charts-*.png).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { walkthroughOrder } from "../_app.ts";
import {
  byTestId,
  e2e,
  liveIsOpen,
  screenshot,
  SETTLE_MS,
  withConsolePage,
} from "./_browser.ts";

/** How the chart's box and what uPlot drew in it measure, in CSS px. */
interface Fit {
  box: number;
  chart: number;
  canvas: number;
  cell: number;
  page: number;
  window: number;
}

function fitOf(page: Page, testid: string): Promise<Fit> {
  return page.evaluate((id) => {
    const box = document.querySelector(`[data-testid="${id}"]`)!;
    const width = (el: Element | null) =>
      el ? el.getBoundingClientRect().width : -1;
    return {
      box: width(box),
      chart: width(box.querySelector(".uplot")),
      canvas: width(box.querySelector("canvas")),
      cell: width(box.closest("li")),
      page: document.documentElement.scrollWidth,
      window: globalThis.innerWidth,
    };
  }, testid);
}

/** The legend's value of series `n` (0: the minute, 1: done, 2: p95). */
function legendValue(page: Page, testid: string, n: number) {
  return byTestId(page, testid)
    .locator(".u-legend .u-series").nth(n).locator(".u-value")
    .textContent();
}

e2e.test("receiver charts: axes, a value on hover, and a fit at 390 and 1280 px", async () => {
  await withConsolePage({ operator: "Charts" }, async ({ page, base }) => {
    // A paid order: every receiver gets deliveries to draw.
    await page.evaluate(async (body) => {
      const csrf = document.querySelector('meta[name="csrf-token"]')
        ?.getAttribute("content") ?? "";
      const send = (path: string, payload: unknown) =>
        fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json", "x-csrf-token": csrf },
          body: JSON.stringify(payload),
        }).then((r) => r.json());
      const order = await send("/api/orders", body);
      await send(`/api/orders/${order.orderId}/pay`, {
        card: "4242424242424242",
      });
    }, walkthroughOrder());

    const chart = "chart-receipts";
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: width < 800 ? 844 : 900 });
      await page.goto(`${base}console/receivers`);
      await liveIsOpen(page);
      // The receipt is written once OrderPaid reaches receipts: its row
      // counts one attempt, live.
      await page.waitForFunction(
        () =>
          document.querySelector('[data-testid="receiver-receipts"] td.num')
            ?.textContent !== "0",
        undefined,
        { timeout: SETTLE_MS },
      );
      const box = byTestId(page, chart);
      await box.locator(".uplot").waitFor();

      // Three axes, each shown and given room (uPlot draws their ticks and
      // labels on the canvas): the minutes, done per minute, p95 in ms.
      const axes = box.locator(".u-axis:not(.u-off)");
      assert.equal(await axes.count(), 3, `${width} px`);
      for (const axis of await axes.all()) {
        const room = (await axis.boundingBox())!;
        assert.ok(room.width > 0 && room.height > 0, JSON.stringify(room));
      }

      // It fits: the chart is as wide as its box, the box as its cell, and
      // nothing scrolls the page sideways.
      const fit = await fitOf(page, chart);
      assert.ok(Math.abs(fit.chart - fit.box) <= 1, JSON.stringify(fit));
      assert.ok(fit.canvas <= fit.box + 0.5, JSON.stringify(fit));
      assert.ok(fit.box <= fit.cell + 0.5, JSON.stringify(fit));
      assert.ok(fit.page <= fit.window, JSON.stringify(fit));

      // Hovering: the first minute of the hour, then the current one; the
      // legend shows the minute under the pointer and its figures.
      const over = box.locator(".u-over");
      await over.scrollIntoViewIfNeeded();
      const area = (await over.boundingBox())!;
      const y = area.y + area.height / 2;
      await page.mouse.move(area.x + 2, y, { steps: 2 });
      await assertCursorOn(page, chart);
      const first = await legendValue(page, chart, 0);
      assert.match(first ?? "", /^\d\d:\d\d UTC$/);
      assert.match(await legendValue(page, chart, 1) ?? "", /^0 per minute$/);
      await page.mouse.move(area.x + area.width - 2, y, { steps: 2 });
      const last = await legendValue(page, chart, 0);
      assert.match(last ?? "", /^\d\d:\d\d UTC$/);
      assert.notEqual(last, first, "the legend follows the pointer");
      assert.match(await legendValue(page, chart, 1) ?? "", /^\d+ per minute$/);
      assert.match(await legendValue(page, chart, 2) ?? "", /^(\d+ ms|–)$/);
      await screenshot(page, `console-receivers-charts-${width}`);
      await page.mouse.move(0, 0);

      // The overview draws the same charts, and they fit there too.
      await page.goto(`${base}console`);
      await byTestId(page, chart).locator(".uplot").waitFor();
      const overview = await fitOf(page, chart);
      assert.ok(
        Math.abs(overview.chart - overview.box) <= 1 &&
          overview.box <= overview.cell + 0.5 &&
          overview.page <= overview.window,
        JSON.stringify(overview),
      );
    }
  });
});

/** The chart's vertical cursor line is shown: the pointer is on the plot. */
async function assertCursorOn(page: Page, testid: string): Promise<void> {
  await byTestId(page, testid).locator(".u-cursor-x:not(.u-off)").waitFor();
}
