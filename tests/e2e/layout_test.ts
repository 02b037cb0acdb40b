/**
 * Every page fits its screen, at 360 and 390 px (phones) and at 1280 px,
 * signed in and signed out, with data on it (orders paid and placed, the
 * kitchen refusing so that Dead letters, Deliveries and the alerts have
 * rows): nothing scrolls the page sideways, every table wider than its box
 * scrolls inside its own wrapper, and axe-core stays clean. At 1280 × 800
 * the overview's figures that need an operator sit on the first screen; at
 * 390 px Dead letters and Deliveries are cards, no table wider than the
 * screen. The overview, Dead letters, Deliveries and an order's page are
 * kept as screenshots at 390 and 1280 px (tests/artifacts/, copied into
 * docs/ for docs/console.md).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { walkthroughOrder } from "../_app.ts";
import { axeViolations, describeViolations } from "./_axe.ts";
import {
  e2e,
  liveIsOpen,
  screenshot,
  scriptErrors,
  SETTLE_MS,
  signIn,
  withBrowser,
} from "./_browser.ts";

/** The widths checked: two phones and a laptop. */
const WIDTHS = [360, 390, 1280];

/** Waits for the page's islands: its live stream open, where it has one. */
async function settled(tab: Page): Promise<void> {
  await tab.waitForLoadState("load");
  if (await tab.locator('[data-testid="live-status"]').count() > 0) {
    await tab.locator('[data-testid="live-status"][data-state="open"]')
      .first().waitFor({ timeout: 10_000 }).catch(() => {});
  }
}

/** What the page's layout breaks, in words; empty when it fits. */
function misfits(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const width = globalThis.innerWidth;
    const page = document.documentElement.scrollWidth;
    if (page > width) found.push(`the page is ${page} px wide`);
    const scrolls = (el: Element | null) => {
      for (; el && el !== document.body; el = el.parentElement) {
        const x = getComputedStyle(el).overflowX;
        if (x === "auto" || x === "scroll") return el;
      }
      return null;
    };
    for (const table of document.querySelectorAll("table")) {
      const name = table.getAttribute("data-testid") ?? table.className;
      const box = scrolls(table.parentElement);
      const right = table.getBoundingClientRect().right;
      if (!box && right > width + 0.5) {
        found.push(`table ${name} ends at ${Math.round(right)} px, no scroll`);
      }
    }
    return found;
  });
}

/** The overview's tiles of what needs an operator. */
const ACTION_FIGURES = [
  "dead",
  "retrying-deliveries",
  "parked",
  "silent-workers",
  "alerts",
];

/** Where each action tile ends, in px from the top of the page. */
function actionBottoms(page: Page): Promise<Record<string, number>> {
  return page.evaluate((ids) =>
    Object.fromEntries(ids.map((id) => {
      const tile = document.querySelector(`[data-testid="tile-${id}"]`);
      const box = tile?.getBoundingClientRect();
      return [id, box ? Math.round(box.bottom + globalThis.scrollY) : -1];
    })), ACTION_FIGURES);
}

/**
 * What keeps the page's tables from being cards: a table wider than the
 * screen, a row not laid out as a card, or an action button off the card.
 */
function notCards(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const width = globalThis.innerWidth;
    for (const table of document.querySelectorAll("table")) {
      const name = table.getAttribute("data-testid") ?? table.className;
      const right = table.getBoundingClientRect().right;
      if (right > width + 0.5 || table.scrollWidth > table.clientWidth + 0.5) {
        found.push(`table ${name} is wider than the screen`);
      }
      for (const row of table.querySelectorAll("tbody tr")) {
        if (getComputedStyle(row).display !== "block") {
          found.push(`a row of ${name} is not a card`);
          break;
        }
      }
      for (const button of table.querySelectorAll("button")) {
        const box = button.getBoundingClientRect();
        if (box.width === 0 || box.right > width + 0.5) {
          found.push(`${button.textContent} of ${name} is out of reach`);
        }
      }
    }
    return found;
  });
}

e2e.test("layout: every page fits 360, 390 and 1280 px, and stays axe-clean", async () => {
  await withBrowser(async ({ browser, base }) => {
    const operator = await browser.newContext();
    const visitor = await browser.newContext();
    const page = await operator.newPage();
    const guest = await visitor.newPage();
    const errors = [...scriptErrors(page)];
    const guestErrors = scriptErrors(guest);

    await signIn(page, base, "Layout");
    const orders = await page.evaluate(async (bodies) => {
      const csrf = document.querySelector('meta[name="csrf-token"]')
        ?.getAttribute("content") ?? "";
      const send = (method: string, path: string, body: unknown) =>
        fetch(path, {
          method,
          headers: { "content-type": "application/json", "x-csrf-token": csrf },
          body: JSON.stringify(body),
        }).then((r) => r.json());
      const paid = await send("POST", "/api/orders", bodies[0]);
      await send("POST", `/api/orders/${paid.orderId}/pay`, {
        card: "4242424242424242",
      });
      await send("PUT", "/api/console/faults", { kitchenRefuses: true });
      const refused = await send("POST", "/api/orders", bodies[1]);
      await send("POST", "/api/orders", bodies[2]);
      return {
        paid: paid.orderId as string,
        refused: refused.orderId as string,
      };
    }, [walkthroughOrder(), walkthroughOrder(), walkthroughOrder()]);
    await page.goto(`${base}console/dead-letters`);
    await liveIsOpen(page);
    // Two at least: the paid order's OrderPaid may reach the kitchen after
    // the switch, and die too.
    await page.locator('tr[data-testid^="dead-letter-row-"]').nth(1).waitFor({
      timeout: SETTLE_MS,
    });
    const guestOrder = await guest.evaluate(async (body) => {
      const r = await fetch("/api/orders", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return (await r.json()).orderId as string;
    }, walkthroughOrder()).catch(() => null);

    const signedIn = [
      "console",
      "console/outbox",
      "console/deliveries",
      "console/deliveries?state=dead",
      "console/dead-letters",
      "console/closure",
      "console/closure/rows?subscriber=kitchen&state=dead",
      "console/receivers",
      "console/kitchen",
      "console/faults",
      "console/order-violations",
      "console/actions",
      "console/search?q=kitchen",
      "labs/ledger",
      "labs/queue",
      "how-it-works",
      "",
      "checkout",
      `orders/${orders.paid}`,
      `orders/${orders.refused}`,
    ];
    const signedOut = [
      "",
      "how-it-works",
      "sign-in",
      "console",
      "no-such-page",
      ...(guestOrder ? [`orders/${guestOrder}`] : []),
    ];
    const found: string[] = [];
    for (const width of WIDTHS) {
      const size = { width, height: width < 800 ? 844 : 800 };
      await page.setViewportSize(size);
      await guest.setViewportSize(size);
      for (
        const [tab, paths, who] of [
          [page, signedIn, "signed in"],
          [guest, signedOut, "signed out"],
        ] as const
      ) {
        for (const path of paths) {
          await tab.goto(`${base}${path}`);
          await settled(tab);
          const where = `${width} px, ${who}, /${path}`;
          for (const m of await misfits(tab)) found.push(`${where}: ${m}`);
          const violations = await axeViolations(tab);
          if (violations.length) {
            found.push(`${where}: ${describeViolations(violations)}`);
          }
        }
      }
      if (width === 360) continue;
      if (width === 1280) {
        // The first screen holds what needs an operator (issue 57).
        await page.goto(`${base}console`);
        await settled(page);
        const bottoms = await actionBottoms(page);
        console.log(
          `overview at 1280 × 800, tiles end at ${JSON.stringify(bottoms)} px`,
        );
        for (const [id, bottom] of Object.entries(bottoms)) {
          if (bottom < 0 || bottom > size.height) {
            found.push(`1280 px: the overview's ${id} ends at ${bottom} px`);
          }
        }
      } else {
        for (const path of ["console/dead-letters", "console/deliveries"]) {
          await page.goto(`${base}${path}`);
          await settled(page);
          for (const m of await notCards(page)) {
            found.push(`${width} px, /${path}: ${m}`);
          }
        }
      }
      for (
        const [path, name] of [
          ["console", "console-overview"],
          ["console/dead-letters", "console-dead-letters"],
          ["console/deliveries", "console-deliveries"],
          [`orders/${orders.refused}`, "order-page"],
        ]
      ) {
        await page.goto(`${base}${path}`);
        await settled(page);
        await screenshot(page, `${name}-${width}`);
      }
    }
    assert.equal(found.join("\n"), "", "pages that do not fit");
    assert.deepEqual([...errors, ...guestErrors], []);
    await operator.close();
    await visitor.close();
  });
});
