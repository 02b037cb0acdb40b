/**
 * The storefront in a real browser, against the whole bakery on a test
 * database: order two cardamom buns and a country loaf, pay with Stripe's
 * test card, and watch the order page turn paid, show the receipt and see
 * all six receivers reach done, without a reload. A declined card leaves the
 * order payment_failed, and it can still be cancelled. Screenshots go to
 * tests/artifacts/ (not committed).
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import {
  e2e,
  markPage,
  orderStateIs,
  payWith,
  placeOrder,
  screenshot as save,
  scriptErrors,
  SETTLE_MS,
  stillMarked,
  withBrowser,
} from "./_browser.ts";

const screenshot = (page: Page, name: string) =>
  save(page, `storefront-${name}`);

/** Waits until `count` receivers of the `eventType` message are done. */
async function receiversDone(page: Page, eventType: string, count: number) {
  await page.waitForFunction(
    ([type, n]) =>
      document.querySelectorAll(
        `[data-event-type="${type}"] .receiver[data-state="done"]`,
      ).length === n,
    [eventType, count] as const,
    { timeout: SETTLE_MS },
  );
}

/**
 * Runs `steps` on a page of a new browser context (a visitor of its own, at
 * 1200×900), checks that the page threw no script error, and closes the
 * context however it went.
 */
async function asVisitor(
  browser: Browser,
  steps: (page: Page) => Promise<void>,
): Promise<void> {
  const context = await browser.newContext({
    viewport: { width: 1200, height: 900 },
  });
  try {
    const page = await context.newPage();
    const errors = scriptErrors(page);
    await steps(page);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
}

e2e.test("storefront: order, pay and watch it settle in the browser", async (t) => {
  await withBrowser(async ({ bakery, browser }) => {
    await t.step(
      "two buns and a loaf, paid with 4242, settle live",
      () =>
        asVisitor(browser, async (page) => {
          // Typed markup must come back as text, on the page and in props.
          await placeOrder(page, bakery.url, {
            name: "Ada </script><b>Baker</b>",
          });
          await orderStateIs(page, "placed");
          assert.equal(
            await page.getByTestId("order-total").textContent(),
            "€13.50",
          );
          assert.match(
            await page.locator(".facts").textContent() ?? "",
            /Ada <\/script><b>Baker<\/b>/,
          );
          assert.equal(await page.locator(".facts b").count(), 0);
          await receiversDone(page, "OrderPlaced", 3);
          await screenshot(page, "1-placed");

          await page.getByRole("link", { name: "Pay", exact: true }).click();
          assert.equal(
            await page.getByTestId("pay-amount").textContent(),
            "€13.50",
          );
          await screenshot(page, "2-pay");
          await payWith(page, "4242 4242 4242 4242");
          await markPage(page);

          await orderStateIs(page, "paid");
          await page.getByTestId("receipt-number").waitFor({
            timeout: SETTLE_MS,
          });
          await receiversDone(page, "OrderPaid", 6);
          assert.ok(await stillMarked(page), "the order page was reloaded");
          assert.match(
            await page.getByTestId("receipt-number").textContent() ?? "",
            /^R-\d{8}-[0-9A-F]{6}$/,
          );
          assert.equal(
            await page.getByTestId("receipt-total").textContent(),
            "€13.50",
          );
          assert.match(
            await page.locator(".receipt").textContent() ?? "",
            /pi_test_[0-9a-f]+/,
          );
          // Paid: nothing left to pay or cancel.
          assert.equal(
            await page.getByRole("link", { name: "Pay" }).count(),
            0,
          );
          assert.equal(
            await page.getByRole("button", { name: "Cancel order" }).count(),
            0,
          );
          await screenshot(page, "3-paid");
        }),
    );

    await t.step(
      "a declined card leaves it payment_failed; then cancel",
      () =>
        asVisitor(browser, async (page) => {
          await page.goto(bakery.url);
          // Placed through the API from the page: same cookie, same origin.
          const orderId = await page.evaluate(async () => {
            const response = await fetch("/api/orders", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({
                items: [{ sku: "cardamom-bun", qty: 2 }, {
                  sku: "country-loaf",
                  qty: 1,
                }],
                customer: { name: "Bo", email: "bo@example.com" },
                fulfilment: "pickup",
                idempotencyKey: crypto.randomUUID(),
              }),
            });
            return (await response.json()).orderId as string;
          });
          await page.goto(`${bakery.url}orders/${orderId}/pay`);
          await payWith(page, "4000 0000 0000 0002");
          await markPage(page);

          await orderStateIs(page, "payment_failed");
          await receiversDone(page, "PaymentFailed", 1);
          await page.getByRole("link", { name: "Pay again" }).waitFor();
          assert.equal(await page.locator(".receipt").count(), 0);
          await screenshot(page, "4-declined");

          await page.getByRole("button", { name: "Cancel order" }).click();
          await page.getByRole("button", { name: "Yes, cancel it" }).click();
          await orderStateIs(page, "cancelled");
          await receiversDone(page, "OrderCancelled", 5);
          assert.ok(await stillMarked(page), "the order page was reloaded");
          await screenshot(page, "5-cancelled");

          // A cancelled order cannot be paid: its pay page leads back.
          await page.goto(`${bakery.url}orders/${orderId}/pay`);
          await page.waitForURL(new RegExp(`/orders/${orderId}$`));
        }),
    );

    await t.step(
      "another visitor's order is a 404; no session is a 401",
      async () => {
        const owner = bakery.client();
        const placed = await owner.json<{ orderId: string }>(
          "POST",
          "/api/orders",
          {
            items: [{ sku: "country-loaf", qty: 1 }],
            customer: { name: "Cy", email: "cy@example.com" },
            fulfilment: "pickup",
            idempotencyKey: crypto.randomUUID(),
          },
        );
        assert.equal(placed.status, 201);
        const path = `orders/${placed.body.orderId}`;
        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          const signedOut = await page.goto(`${bakery.url}${path}`);
          assert.equal(signedOut?.status(), 401);
          await page.getByText("Place an order first").waitFor();

          // A session of its own, in another sandbox.
          await page.goto(bakery.url);
          await page.evaluate(() =>
            fetch("/api/session", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ name: "Dee" }),
            })
          );
          assert.equal(
            (await page.goto(`${bakery.url}${path}`))?.status(),
            404,
          );
          assert.equal(
            (await page.goto(`${bakery.url}${path}/pay`))?.status(),
            404,
          );
          assert.equal(
            (await page.goto(`${bakery.url}orders/not-an-order`))?.status(),
            404,
          );
        } finally {
          await context.close();
        }
      },
    );
  });
});
