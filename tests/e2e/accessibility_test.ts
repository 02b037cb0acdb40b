/**
 * Every page passes axe-core (WCAG 2.0 and 2.1, A and AA) with no
 * violations, in a real browser, with data on it: orders paid, declined and
 * cancelled (a kitchen card in every column), the kitchen refusing so that
 * a later order's messages are dead letters, one of them refused, and the
 * forms' error messages and confirmations open. The pages are one list,
 * `PAGES`: a new page is one more line there.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { axeViolations, describeViolations } from "./_axe.ts";
import {
  byTestId,
  deadLettersShown,
  e2e,
  fillBasket,
  liveIsOpen,
  openConsolePage,
  orderStateIs,
  payWith,
  placeOrder,
  scriptErrors,
  setFault,
  SETTLE_MS,
  signIn,
  toConsole,
  withBrowser,
} from "./_browser.ts";

/** What the setup left behind, for the pages' paths. */
interface Seen {
  /** An order placed and paid with the test card: its card is confirmed. */
  paidOrder: string;
  /** An order placed, its card declined: open for payment, a new card. */
  declinedOrder: string;
  /** A dead letter: the kitchen's OrderPlaced of an order paid later. */
  deadLetter: number;
}

/** One page to check, and what to do on it before axe looks. */
interface Stop {
  name: string;
  path: (seen: Seen) => string;
  /** Signed out (a fresh visitor) instead of as the operator. */
  visitor?: boolean;
  /** Waits for the page to be ready, or brings it into the state checked. */
  ready?: (page: Page, seen: Seen) => Promise<void>;
}

const consoleStop = (
  name: string,
  path: (seen: Seen) => string,
  then?: Stop["ready"],
): Stop => ({
  name,
  path,
  ready: async (page, seen) => {
    await liveIsOpen(page);
    await then?.(page, seen);
  },
});

/**
 * Every page of the bakery, in the states that matter, visited in this order
 * (the last ones change what they show: a refusal).
 */
const PAGES: Stop[] = [
  { name: "storefront", path: () => "/", visitor: true },
  { name: "storefront, basket filled", path: () => "/", ready: fillBasket },
  { name: "checkout", path: () => "/checkout" },
  {
    name: "checkout, with the form's errors",
    path: () => "/checkout",
    ready: async (page) => {
      await page.getByRole("button", { name: "Place order" }).click();
      await page.locator(".field-error, .form-error").first().waitFor();
    },
  },
  {
    name: "order page, paid",
    path: (s) => `/orders/${s.paidOrder}`,
    ready: (page) => orderStateIs(page, "paid"),
  },
  {
    name: "order page, declined",
    path: (s) => `/orders/${s.declinedOrder}`,
    ready: (page) => orderStateIs(page, "payment_failed"),
  },
  {
    name: "order page, asking to confirm a cancel",
    path: (s) => `/orders/${s.declinedOrder}`,
    ready: async (page) => {
      await orderStateIs(page, "payment_failed");
      await page.getByRole("button", { name: "Cancel order" }).click();
      await page.getByRole("button", { name: "Yes, cancel it" }).waitFor();
    },
  },
  {
    name: "pay page, after a declined card",
    path: (s) => `/orders/${s.declinedOrder}/pay`,
    ready: (page) => page.getByText("Test checkout").waitFor(),
  },
  {
    name: "how it's built",
    path: () => "/how-it-works",
    ready: (page) => byTestId(page, "try-it-progress").waitFor(),
  },
  {
    name: "how it's built, signed out",
    path: () => "/how-it-works",
    visitor: true,
  },
  { name: "console sign-in", path: () => "/sign-in", visitor: true },
  { name: "not found", path: () => "/no-such-page", visitor: true },
  consoleStop("console overview", () => "/console"),
  consoleStop("console outbox", () => "/console/outbox"),
  consoleStop("console receivers", () => "/console/receivers"),
  consoleStop("console order violations", () => "/console/order-violations"),
  consoleStop("console deliveries", () => "/console/deliveries"),
  consoleStop(
    "console deliveries, dead",
    () => "/console/deliveries?state=dead",
  ),
  consoleStop("console delivery", (s) => `/console/deliveries/${s.deadLetter}`),
  consoleStop("console dead letters", () => "/console/dead-letters"),
  consoleStop(
    "console dead letters, refuse form open",
    () => "/console/dead-letters",
    async (page, s) => {
      await byTestId(page, `refuse-${s.deadLetter}`).click();
      await byTestId(page, `refuse-form-${s.deadLetter}-confirm`).click();
      await byTestId(page, `refuse-form-${s.deadLetter}-error`).waitFor();
    },
  ),
  consoleStop(
    "console dead letters, a group's dry-run count to confirm",
    () => "/console/dead-letters",
    async (page) => {
      await page.locator('[data-testid^="group-redrive-"]').first().click();
      await byTestId(page, "group-confirm").waitFor();
    },
  ),
  consoleStop("console search", () => "/console/search?q=kitchen"),
  consoleStop("console search, nothing found", () => "/console/search?q=zzzz"),
  consoleStop(
    "console dead letters, filtered",
    () => "/console/dead-letters?subscriber=kitchen&window=1h",
  ),
  {
    name: "console, no such delivery",
    path: () => "/console/deliveries/999999999",
  },
  consoleStop("console closure", () => "/console/closure"),
  consoleStop(
    "console closure rows",
    () => "/console/closure/rows?subscriber=kitchen&state=dead",
  ),
  consoleStop("console kitchen", () => "/console/kitchen"),
  consoleStop("console faults", () => "/console/faults"),
  consoleStop("labs ledger", () => "/labs/ledger"),
  {
    name: "labs ledger, after a run",
    path: () => "/labs/ledger",
    ready: async (page) => {
      await byTestId(page, "run-lost-ack").click();
      await page.waitForURL(/\/labs\/ledger\?ran=lost-ack/);
      await byTestId(page, "ledger-figures").waitFor();
    },
  },
  consoleStop("labs queue", () => "/labs/queue"),
  {
    name: "labs queue, after a run",
    path: () => "/labs/queue",
    ready: async (page) => {
      await byTestId(page, "queue-run").click();
      await byTestId(page, "queue-result").waitFor({ timeout: SETTLE_MS });
    },
  },
  consoleStop(
    "console dead letters, one refused",
    () => "/console/dead-letters",
    async (page, s) => {
      await byTestId(page, `refuse-${s.deadLetter}`).click();
      await byTestId(page, `refuse-form-${s.deadLetter}-reason`).fill(
        "Baked by hand",
      );
      await byTestId(page, `refuse-form-${s.deadLetter}-confirm`).click();
      await page.locator(
        `[data-testid="dead-letter-row-${s.deadLetter}"][data-state="refused"]`,
      ).waitFor({ timeout: SETTLE_MS });
    },
  ),
  consoleStop(
    "console deliveries, refused",
    () => "/console/deliveries?state=refused",
  ),
  consoleStop(
    "console delivery, refused",
    (s) => `/console/deliveries/${s.deadLetter}`,
  ),
  consoleStop(
    "console operator log, after a refusal",
    () => "/console/actions",
    (page) => byTestId(page, "action-refuse").waitFor(),
  ),
];

e2e.test("accessibility: every page passes axe-core (WCAG 2.1 A and AA) with data on it", async () => {
  await withBrowser(async ({ browser, base }) => {
    const operator = await browser.newContext({
      viewport: { width: 1280, height: 900 },
    });
    const visitor = await browser.newContext({
      viewport: { width: 1280, height: 900 },
    });
    const page = await operator.newPage();
    const guest = await visitor.newPage();
    // One list each: a copy made here would stay empty.
    const pageErrors = scriptErrors(page);
    const guestErrors = scriptErrors(guest);

    // Three orders while the kitchen works: paid, declined, cancelled; the
    // board shows a card in each of its columns.
    await signIn(page, base, "Accessibility");
    const paidOrder = await placeOrder(page, base);
    await page.getByRole("link", { name: "Pay", exact: true }).click();
    await payWith(page, "4242 4242 4242 4242");
    await orderStateIs(page, "paid");
    const declinedOrder = await placeOrder(page, base, { name: "Bo Baker" });
    await page.getByRole("link", { name: "Pay", exact: true }).click();
    await payWith(page, "4000 0000 0000 0002");
    await orderStateIs(page, "payment_failed");
    const cancelledOrder = await placeOrder(page, base, { name: "Cy Baker" });
    await page.getByRole("button", { name: "Cancel order" }).click();
    await page.getByRole("button", { name: "Yes, cancel it" }).click();
    await orderStateIs(page, "cancelled");
    await toConsole(page);
    await openConsolePage(page, "kitchen");
    for (
      const [order, column] of [
        [paidOrder, "confirmed"],
        [declinedOrder, "new"],
        [cancelledOrder, "cancelled"],
      ]
    ) {
      await page.locator(
        `[data-testid="kitchen-column-${column}"] [data-testid="kitchen-card-${order}"]`,
      ).waitFor({ timeout: SETTLE_MS });
    }

    // Then the kitchen refuses: a fourth order's two messages to it die.
    await setFault(page, "kitchenRefuses", true);
    await placeOrder(page, base, { name: "Di Baker" });
    await page.getByRole("link", { name: "Pay", exact: true }).click();
    await payWith(page, "4242 4242 4242 4242");
    await orderStateIs(page, "paid");
    await toConsole(page);
    await openConsolePage(page, "dead-letters");
    const dead = await deadLettersShown(page, 2, 4);
    const seen: Seen = {
      paidOrder,
      declinedOrder,
      deadLetter: dead.find((d) => d.eventType === "OrderPlaced")!.id,
    };

    const found: string[] = [];
    for (const stop of PAGES) {
      const tab = stop.visitor ? guest : page;
      await tab.goto(new URL(stop.path(seen).slice(1), base).href);
      await stop.ready?.(tab, seen);
      const violations = await axeViolations(tab);
      if (violations.length) {
        found.push(
          `${stop.name} (${tab.url()}):\n` +
            describeViolations(violations),
        );
      }
    }
    assert.equal(found.join("\n\n"), "", "axe-core found violations");
    assert.deepEqual([...pageErrors, ...guestErrors], []);
    await operator.close();
    await visitor.close();
  });
});
