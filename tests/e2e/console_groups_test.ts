/**
 * The console's operator tools in the browser: a failure group redriven by
 * one click after its dry-run count, a bulk job's progress bar reaching
 * done, and the header's search box finding an order by its short number.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { walkthroughOrder } from "../_app.ts";
import { copyDeadLetter } from "../_console_ops.ts";
import {
  ARTIFACTS,
  byTestId,
  e2e,
  liveIsOpen,
  openConsolePage,
  SETTLE_MS,
  withConsolePage,
} from "./_browser.ts";

/** A JSON call from the page, with its session and CSRF token. */
function api(page: Page, method: string, path: string, body?: unknown) {
  return page.evaluate(async ([method, path, body]) => {
    const token = document.querySelector<HTMLMetaElement>(
      'meta[name="csrf-token"]',
    )?.content ?? "";
    const response = await fetch(path as string, {
      method: method as string,
      headers: { "content-type": "application/json", "x-csrf-token": token },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  }, [method, path, body] as const);
}

async function placeOrders(page: Page, n: number): Promise<string[]> {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const { status, body } = await api(
      page,
      "POST",
      "/api/orders",
      walkthroughOrder(),
    );
    assert.equal(status, 201, JSON.stringify(body));
    ids.push(body.orderId);
  }
  return ids;
}

/** Saves the failure groups' panel as tests/artifacts/<name>.png. */
async function groupsShot(page: Page, name: string) {
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await byTestId(page, "failure-groups").screenshot({
    path: new URL(`${name}.png`, ARTIFACTS).pathname,
  });
}

/** Waits until the failure groups' table holds one group of `count`. */
async function oneGroupOf(page: Page, count: number): Promise<string> {
  await page.waitForFunction(
    (n) => {
      const rows = document.querySelectorAll('tr[data-testid^="group-"]');
      return rows.length === 1 &&
        rows[0].querySelector('[data-testid="group-count"]')?.textContent ===
          String(n);
    },
    count,
    { timeout: SETTLE_MS },
  );
  const id = await page.locator('tr[data-testid^="group-"]')
    .getAttribute("data-testid");
  return id!.replace(/^group-/, "");
}

e2e.test("console in the browser: a failure group redriven by one click after its dry-run count", async () => {
  await withConsolePage({ operator: "Group shift" }, async ({ page }) => {
    await api(page, "PUT", "/api/console/faults", { kitchenRefuses: true });
    await placeOrders(page, 2);
    await openConsolePage(page, "dead-letters");
    const key = await oneGroupOf(page, 2);
    await api(page, "PUT", "/api/console/faults", { kitchenRefuses: false });

    await byTestId(page, `group-redrive-${key}`).click();
    const count = byTestId(page, "group-confirm-count");
    await count.waitFor();
    assert.match(
      await count.textContent() ?? "",
      /^Redrive 2 dead letters of this group, oldest first\?$/,
    );
    // The dry run changed nothing: both are still dead.
    const { body } = await api(page, "GET", "/api/console/dead-letters");
    assert.equal(body.items.length, 2);

    await byTestId(page, "group-confirm-go").click();
    await page.locator('[data-testid="group-notice"]', {
      hasText: "Redrove 2 dead letters, oldest first.",
    }).waitFor({ timeout: SETTLE_MS });
    await byTestId(page, "groups-empty").waitFor({ timeout: SETTLE_MS });
    await byTestId(page, "dead-letters-empty").waitFor({ timeout: SETTLE_MS });
  });
});

e2e.test("console in the browser: a bulk job's progress bar reaches done", async () => {
  await withConsolePage({ operator: "Job shift" }, async ({ page, bakery }) => {
    await api(page, "PUT", "/api/console/faults", { kitchenRefuses: true });
    await placeOrders(page, 1);
    await openConsolePage(page, "dead-letters");
    await oneGroupOf(page, 1);
    const { body } = await api(page, "GET", "/api/console/dead-letters");
    // The kitchen's OrderPlaced: copied in orders' queue, which holds it.
    await copyDeadLetter(bakery.at("orders"), body.items[0].id, 149);
    await page.reload();
    await liveIsOpen(page);
    const key = await oneGroupOf(page, 150);

    await byTestId(page, `group-redrive-${key}`).click();
    await byTestId(page, "group-confirm-count").waitFor();
    assert.match(
      await byTestId(page, "group-confirm-count").textContent() ?? "",
      /Redrive 150 dead letters.*more than 100: they go as a job/,
    );
    await byTestId(page, "group-rate").fill("100");
    await groupsShot(page, "console-failure-groups-confirm");
    await byTestId(page, "group-confirm-go").click();
    const job = page.locator('[data-testid^="job-"][data-state]');
    await job.waitFor({ timeout: SETTLE_MS });
    await page.locator('[data-testid^="job-"][data-state="done"]').waitFor({
      timeout: SETTLE_MS,
    });
    const bar = job.locator('[data-testid="job-bar"]');
    assert.equal(await bar.getAttribute("max"), "150");
    assert.equal(
      await bar.evaluate((e) => (e as HTMLProgressElement).value),
      150,
    );
    assert.equal(
      await job.locator('[data-testid="job-count"]').textContent(),
      "150 / 150",
    );
    assert.equal(await job.locator('[data-testid="job-cancel"]').count(), 0);
    await groupsShot(page, "console-failure-groups-job-done");
  });
});

e2e.test("console in the browser: the header's search box finds an order by its short number", async () => {
  await withConsolePage({ operator: "Search shift" }, async ({ page }) => {
    const [orderId] = await placeOrders(page, 1);
    const short = orderId.slice(-6).toUpperCase();
    await byTestId(page, "search-box").fill(short.toLowerCase());
    await byTestId(page, "search-box").press("Enter");
    await page.waitForURL(/\/console\/search\?q=/);
    const result = byTestId(page, "result-order");
    await result.waitFor();
    assert.match(
      await result.textContent() ?? "",
      new RegExp(`Order ${short}`),
    );
    await result.locator("a").click();
    await page.waitForURL(new RegExp(`/orders/${orderId}$`));
  });
});
