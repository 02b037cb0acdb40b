/**
 * Two browsers, two sandboxes: two operators (separate browser contexts,
 * so separate cookies) each place an order while their kitchen refuses, and
 * each gets one dead letter. Neither sees the other's order or dead letter
 * on any page, the other's order and delivery pages are 404, and redriving
 * the other's dead letter through the API, with one's own cookie and CSRF
 * token, answers 404 and changes nothing, while one's own answers 202.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import {
  byTestId,
  deadLetterRows,
  deadLettersShown,
  e2e,
  liveIsOpen,
  openConsolePage,
  placeOrder,
  setFault,
  signedInPage,
  toConsole,
  withBrowser,
} from "./_browser.ts";

interface Operator {
  page: Page;
  errors: string[];
  orderId: string;
  deadLetterId: number;
}

/** Signs in, makes the kitchen refuse, orders, and waits for the dead letter. */
async function operator(
  browser: Browser,
  base: string,
  name: string,
): Promise<Operator> {
  const { page, errors } = await signedInPage(browser, base, name);
  await setFault(page, "kitchenRefuses", true);
  const orderId = await placeOrder(page, base, { name: `Customer of ${name}` });
  await toConsole(page);
  await openConsolePage(page, "dead-letters");
  const [dead] = await deadLettersShown(page, 1, 4);
  return { page, errors, orderId, deadLetterId: dead.id };
}

/** Redrives dead letter `id` with the page's cookie and CSRF token. */
function redriveVia(page: Page, id: number) {
  return page.evaluate(async (deadLetterId) => {
    const token = document.querySelector<HTMLMetaElement>(
      'meta[name="csrf-token"]',
    )?.content;
    if (!token) throw new Error("the page has no CSRF token");
    const response = await fetch(
      `/api/console/dead-letters/${deadLetterId}/redrive`,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-csrf-token": token,
        },
        body: "{}",
      },
    );
    return { status: response.status, body: await response.json() };
  }, id);
}

/** The targets of every order link and delivery link on the page. */
function linksOf(page: Page): Promise<string[]> {
  return page.$$eval(
    'a[href^="/orders/"], a[href^="/console/deliveries/"]',
    (links) => links.map((a) => a.getAttribute("href")!),
  );
}

e2e.test("console in the browser: two operators, two sandboxes, nothing shared", async () => {
  await withBrowser(async ({ browser, base }) => {
    const [a, b] = await Promise.all([
      operator(browser, base, "Morning shift"),
      operator(browser, base, "Evening shift"),
    ]);
    assert.notEqual(a.orderId, b.orderId);
    assert.notEqual(a.deadLetterId, b.deadLetterId);

    for (const [me, other] of [[a, b], [b, a]]) {
      const page = me.page;
      // Dead letters: mine only.
      assert.deepEqual(
        (await deadLetterRows(page)).map((d) => d.id),
        [me.deadLetterId],
      );
      // Deliveries, outbox, kitchen, closure rows: nothing of the other's.
      for (const key of ["deliveries", "outbox", "kitchen", "overview"]) {
        await openConsolePage(page, key);
        const links = await linksOf(page);
        assert.ok(
          !links.some((href) =>
            href.includes(other.orderId) ||
            href === `/console/deliveries/${other.deadLetterId}`
          ),
          `${key} of one sandbox links to the other's: ${links.join(" ")}`,
        );
      }
      await openConsolePage(page, "deliveries");
      assert.ok(
        (await linksOf(page)).includes(`/orders/${me.orderId}`),
        "my deliveries list my order",
      );
      // The other's pages are not found.
      const order = await page.goto(`${base}orders/${other.orderId}`);
      assert.equal(order?.status(), 404);
      const delivery = await page.goto(
        `${base}console/deliveries/${other.deadLetterId}`,
      );
      assert.equal(delivery?.status(), 404);
      const mine = await page.goto(
        `${base}console/deliveries/${me.deadLetterId}`,
      );
      assert.equal(mine?.status(), 200);
      await liveIsOpen(page);
    }

    // The API: the other's dead letter is 404, with a valid cookie and
    // token, as the 202 for my own shows.
    const refused = await redriveVia(b.page, a.deadLetterId);
    assert.equal(refused.status, 404, JSON.stringify(refused.body));
    const own = await redriveVia(b.page, b.deadLetterId);
    assert.equal(own.status, 202, JSON.stringify(own.body));
    assert.deepEqual(own.body.ids, [b.deadLetterId]);

    // The first operator's dead letter is as it was: dead after 4 attempts,
    // never redriven, no operator action.
    await a.page.goto(`${base}console/deliveries/${a.deadLetterId}`);
    await liveIsOpen(a.page);
    assert.equal(
      await byTestId(a.page, "delivery-detail").getAttribute("data-state"),
      "dead",
    );
    assert.equal(
      await a.page.locator('[data-testid^="attempt-row-"]').count(),
      4,
    );
    assert.equal(await byTestId(a.page, "operator-actions").count(), 0);

    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
    await a.page.context().close();
    await b.page.context().close();
  });
});
