/**
 * The console's live pages in the browser, one sandbox per step:
 *
 * - Live ages: with "Queue refuses sends" on, the relay cannot publish, so a
 *   new order's OrderPlaced stays in the outbox. The outbox page, open before
 *   the order was placed in another tab, shows the row when it appears and
 *   counts its age up, with no reload and no navigation.
 * - A page whose event stream opens late (held back here) still shows what
 *   changed between its render and the stream's start: it looks again when
 *   the stream says hello.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  byTestId,
  deadLetterRows,
  deadLettersShown,
  e2e,
  liveIsOpen,
  markPage,
  openConsolePage,
  placeOrder,
  setFault,
  SETTLE_MS,
  signedInPage,
  stillMarked,
  withBrowser,
} from "./_browser.ts";

/** The seconds of an age as the console prints it: `<1 s`, `7 s`, `2 min 05 s`. */
function seconds(age: string): number {
  if (age === "<1 s") return 0;
  const short = age.match(/^(\d+) s$/);
  if (short) return Number(short[1]);
  const long = age.match(/^(\d+) min (\d+) s$/);
  if (long) return Number(long[1]) * 60 + Number(long[2]);
  throw new Error(`not an age in seconds: ${JSON.stringify(age)}`);
}

/** Waits until the age in `rowTestId` reads more than `than` seconds. */
async function ageAbove(page: Page, rowTestId: string, than: number) {
  const handle = await page.waitForFunction(
    ([id, limit]) => {
      const text = document.querySelector(
        `[data-testid="${id}"] [data-testid="age"]`,
      )?.textContent ?? "";
      const m = text.match(/^(\d+) s$/) ?? text.match(/^(\d+) min (\d+) s$/);
      if (!m) return false;
      const s = m.length === 3
        ? Number(m[1]) * 60 + Number(m[2])
        : Number(m[1]);
      return s > limit ? text : false;
    },
    [rowTestId, than] as const,
    { timeout: SETTLE_MS },
  );
  return await handle.jsonValue() as string;
}

e2e.test("console in the browser: live pages", async (t) => {
  await withBrowser(async ({ browser, base }) => {
    await t.step(
      "outbox ages grow live while the queue refuses sends",
      async () => {
        const { page, errors } = await signedInPage(
          browser,
          base,
          "Relay watch",
        );
        const context = page.context();
        await setFault(page, "queueRefusesSends", true);
        await openConsolePage(page, "outbox");
        assert.equal(await byTestId(page, "outbox-pending").textContent(), "0");

        // From here on the page must change by itself.
        await markPage(page);
        let navigations = 0;
        page.on("framenavigated", (frame) => {
          if (frame === page.mainFrame()) navigations++;
        });

        // The order, in another tab of the same visitor.
        const shop = await context.newPage();
        const orderId = await placeOrder(shop, base);
        await shop.close();

        const row = page.locator(
          `tr[data-testid^="outbox-row-"]:has(a[href="/orders/${orderId}"])`,
        );
        await row.waitFor({ timeout: SETTLE_MS });
        const testid = (await row.getAttribute("data-testid"))!;
        const cells = await row.locator("td").allTextContents();
        assert.equal(cells[1], "Orders");
        assert.equal(cells[2], "OrderPlaced");
        assert.match(testid, /^outbox-row-[0-9a-f-]{36}$/);
        assert.equal(await byTestId(page, "outbox-pending").textContent(), "1");

        // The age, read twice a bit over a second apart: it has grown. Polled,
        // since the page ticks once a second on its own clock.
        const first = await row.locator('[data-testid="age"]').textContent() ??
          "";
        const before = seconds(first);
        const started = performance.now();
        const second = await ageAbove(page, testid, before);
        const after = seconds(second);
        assert.ok(after > before, `age ${first} then ${second}`);
        // And on: two more ticks.
        const third = seconds(await ageAbove(page, testid, after + 1));
        assert.ok(third >= after + 2, `age ${second} then ${third}`);
        // Ages print whole seconds, and a refresh from the server may move
        // them by its round trip: half a second of slack.
        assert.ok(
          performance.now() - started >= 1000 * (third - before - 1) - 500,
          "the age ran ahead of the clock",
        );

        // The relay keeps trying; the row says why it is still there.
        await page.waitForFunction(
          (id) => {
            const tds = document.querySelectorAll(`[data-testid="${id}"] td`);
            return Number(tds[5]?.textContent) > 0 &&
              (tds[6]?.textContent ?? "–") !== "–";
          },
          testid,
          { timeout: SETTLE_MS },
        );

        assert.equal(navigations, 0, "the outbox page navigated");
        assert.ok(await stillMarked(page), "the outbox page was reloaded");
        assert.deepEqual(errors, []);
        await context.close();
      },
    );

    await t.step(
      "a change made before the event stream opens still shows",
      async () => {
        const { page: late, errors } = await signedInPage(
          browser,
          base,
          "Late stream",
        );
        const context = late.context();
        await setFault(late, "kitchenRefuses", true);

        // One tab whose event stream is held back, one that is live; both
        // on the dead letters, rendered before there is any.
        const held = Promise.withResolvers<void>();
        await late.route("**/api/events", async (route) => {
          await held.promise;
          await route.continue();
        });
        await late.goto(`${base}console/dead-letters`);
        await byTestId(late, "dead-letters-empty").waitFor();
        assert.equal(
          await byTestId(late, "live-status").getAttribute("data-state"),
          "connecting",
        );
        const live = await context.newPage();
        await live.goto(`${base}console/dead-letters`);
        await liveIsOpen(live);

        const shop = await context.newPage();
        const orderId = await placeOrder(shop, base);
        await shop.close();
        // Once the live tab shows the dead letter, its change event has come
        // and gone: the held tab will hear of it only by looking again.
        const [dead] = await deadLettersShown(live, 1, 4);
        assert.equal(dead.eventType, "OrderPlaced");
        assert.equal(await deadLetterRows(late).then((r) => r.length), 0);

        held.resolve();
        await liveIsOpen(late);
        const [seen] = await deadLettersShown(late, 1, 4);
        assert.equal(seen.id, dead.id);
        assert.equal(
          await byTestId(late, `dead-letter-row-${dead.id}`)
            .locator(`a[href="/orders/${orderId}"]`).count(),
          1,
        );
        assert.deepEqual(errors, []);
        await context.close();
      },
    );
  });
});
