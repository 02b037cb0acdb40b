/**
 * What the browser tests share: Debian's Chromium launched through
 * playwright-core, screenshots under tests/artifacts/ (not committed), and
 * the steps a person takes in the storefront and the console, so that each
 * test reads as the story it tells.
 *
 * Every wait here waits on something on the page (a URL, an element, an
 * attribute), never on the clock.
 */
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { type TestBakery, withTestBakery } from "../_app.ts";
import { findOnPath } from "../_setup_tools.ts";

/**
 * The system Chromium, found on PATH (Debian's is /usr/bin/chromium);
 * `deno task test` installs it where it is missing and it can.
 */
export const CHROMIUM: string | null = findOnPath("chromium");

/** Why the browser tests cannot run here, or null when they can. */
export const browserMissing: string | null = CHROMIUM
  ? null
  : "no chromium on PATH (Debian: apt-get install chromium)";
// Once per file; tests/run.ts gathers the distinct reasons for its summary.
if (browserMissing) console.log(`skipped: ${browserMissing}`);

/**
 * `e2e.test` is `Deno.test` for a test that drives the browser: ignored, not
 * failed, where there is no Chromium, so that a machine without one still
 * runs everything else. (A method, so `deno fmt` lays it out as it does
 * `Deno.test`.)
 *
 * @example
 * e2e.test("storefront: order and pay", async () => {
 *   await withBrowser(async ({ browser, base }) => {});
 * });
 */
export const e2e = {
  /** Also ignored when one of `alsoMissing` is a reason (`natsMissing`). */
  test(
    name: string,
    fn: (t: Deno.TestContext) => Promise<void>,
    ...alsoMissing: (string | null)[]
  ): void {
    const ignore = [browserMissing, ...alsoMissing].some((r) => r !== null);
    Deno.test({ name, ignore, fn });
  },
};

/** Where screenshots go; tests/artifacts/ is in .gitignore. */
export const ARTIFACTS = new URL("../artifacts/", import.meta.url);

/**
 * How long a page may take to show what the workers did. A payment goes
 * through a webhook, a relay and six consumers, and a dead letter through
 * four attempts: about a second on a quiet machine, several on a loaded one.
 */
export const SETTLE_MS = 30_000;

/** An order page: `/orders/<uuid>`. */
export const ORDER_URL = /\/orders\/[0-9a-f-]{36}(\?.*)?$/;

/** Launches the system Chromium, headless; fails early when it is missing. */
export async function launch(): Promise<Browser> {
  if (!CHROMIUM) throw new Error(`${browserMissing}: register with e2e.test`);
  return await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** What `withBrowser` hands its test. */
export interface BrowserTest {
  bakery: TestBakery;
  browser: Browser;
  /** The bakery's `url`, ending in a slash: `${base}console`. */
  base: string;
}

/**
 * Runs `run` with Chromium against the whole bakery on a fresh database,
 * started with `env`; closes the browser, then stops the bakery, whatever
 * `run` did.
 *
 * @example
 * await withBrowser(async ({ browser, base }) => {
 *   const { page } = await signedInPage(browser, base, "Night shift");
 * });
 */
export function withBrowser(
  run: (test: BrowserTest) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  return withTestBakery(async (bakery) => {
    const browser = await launch();
    try {
      await run({ bakery, browser, base: bakery.url });
    } finally {
      await browser.close();
    }
  }, env);
}

/**
 * A 1280×900 page in a browser context of its own (its own cookies, so its
 * own sandbox), signed in as `operator` from `path` as `signIn` does; with
 * the script errors it collects from before the first navigation.
 */
export async function signedInPage(
  browser: Browser,
  base: string,
  operator: string,
  path?: string,
): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  const errors = scriptErrors(page);
  await signIn(page, base, operator, path);
  return { page, errors };
}

/** Who `withConsolePage` signs in, and on which page. */
export interface ConsolePageOptions {
  operator: string;
  /** The page signed in from, and open when `run` starts: `console`. */
  path?: string;
}

/** What `withConsolePage` hands its test. */
export interface ConsolePageTest {
  bakery: TestBakery;
  page: Page;
  base: string;
}

/**
 * The usual console test: on a fresh bakery, runs `run` on a page signed in
 * as `options.operator` (see `signedInPage`); once `run` has passed, checks
 * that the page threw no script error and closes its context.
 *
 * @example
 * await withConsolePage({ operator: "Night shift" }, async ({ page }) => {
 *   await openConsolePage(page, "faults");
 * });
 */
export function withConsolePage(
  options: ConsolePageOptions,
  run: (test: ConsolePageTest) => Promise<void>,
): Promise<void> {
  return withBrowser(async ({ bakery, browser, base }) => {
    const { page, errors } = await signedInPage(
      browser,
      base,
      options.operator,
      options.path,
    );
    await run({ bakery, page, base });
    assert.deepEqual(errors, []);
    await page.context().close();
  });
}

/** Saves a full-page screenshot as tests/artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({
    path: new URL(`${name}.png`, ARTIFACTS).pathname,
    fullPage: true,
  });
}

/** Collects the page's uncaught script errors; assert it stays empty. */
export function scriptErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  return errors;
}

/** A locator for `data-testid="<id>"`, exactly. */
export const byTestId = (page: Page, id: string) =>
  page.locator(`[data-testid="${id}"]`);

// A reload or a navigation would drop this mark, so finding it later proves
// that the page changed by itself.
/** Marks the page's window; `stillMarked` tells whether it is the same one. */
export const markPage = (page: Page): Promise<void> =>
  page.evaluate(() => {
    (globalThis as Record<string, unknown>).__notReloaded = true;
  });
/** Whether the window that `markPage` marked is still the one shown. */
export const stillMarked = (page: Page): Promise<boolean> =>
  page.evaluate(() =>
    (globalThis as Record<string, unknown>).__notReloaded === true
  );

/** An expiry that is always in the future: December of next year. */
export function futureExpiry(): string {
  return `12/${String((new Date().getFullYear() + 1) % 100).padStart(2, "0")}`;
}

/** The storefront's basket of the walkthrough: two buns and a loaf. */
export async function fillBasket(page: Page): Promise<void> {
  await page.getByRole("button", { name: "Add to basket: Cardamom bun" })
    .click();
  await page.getByRole("button", { name: "One Cardamom bun more" }).first()
    .click();
  await page.getByRole("button", { name: "Add to basket: Country loaf" })
    .click();
}

/** Options of `placeOrder`: who orders, and a hook per page on the way. */
export interface PlaceOrderOptions {
  name?: string;
  /** Called on the menu with the basket filled, and on the filled checkout. */
  onPage?: (which: "menu" | "checkout") => Promise<void>;
}

/**
 * Orders two cardamom buns and a country loaf for delivery, from the menu at
 * `base`, as a visitor would; returns the order's id from its page's URL.
 */
export async function placeOrder(
  page: Page,
  base: string,
  options: PlaceOrderOptions = {},
): Promise<string> {
  await page.goto(base);
  await fillBasket(page);
  await options.onPage?.("menu");
  await page.getByRole("link", { name: /checkout/i }).first().click();
  await page.waitForURL(/\/checkout$/);
  await page.fill("#name", options.name ?? "Ada Baker");
  await page.fill("#email", "ada@example.com");
  await page.getByText("Delivery", { exact: true }).click();
  await options.onPage?.("checkout");
  await page.getByRole("button", { name: "Place order" }).click();
  await page.waitForURL(ORDER_URL);
  return new URL(page.url()).pathname.split("/")[2];
}

/** On the pay page: fills the test checkout's card form and presses Pay. */
export async function payWith(page: Page, card: string): Promise<void> {
  await page.waitForURL(/\/pay$/);
  await page.getByText("Test checkout").waitFor();
  await page.fill("#card", card);
  await page.fill("#expiry", futureExpiry());
  await page.fill("#cvc", "123");
  await page.getByRole("button", { name: /^Pay €/ }).click();
  await page.waitForURL(ORDER_URL);
}

/** Waits for the order page's state badge to read `state`. */
export async function orderStateIs(page: Page, state: string): Promise<void> {
  await page.locator(`[data-testid="order-state"][data-state="${state}"]`)
    .waitFor({ timeout: SETTLE_MS });
}

/**
 * Signs in on the sign-in page as `name`, coming from `base` + `path` (a
 * console page, which sends a visitor without a name to sign in first), and
 * waits for that page with its event stream open.
 */
export async function signIn(
  page: Page,
  base: string,
  name: string,
  path = "console",
): Promise<void> {
  await page.goto(`${base}${path}`);
  await page.waitForURL(/\/sign-in\?next=/);
  await byTestId(page, "sign-in-name").fill(name);
  await byTestId(page, "sign-in-submit").click();
  await page.waitForURL(new URL(path, base).href);
  await liveIsOpen(page);
  const shown = await byTestId(page, "operator-name").textContent();
  if (shown !== name) throw new Error(`signed in as ${shown}, not ${name}`);
}

/** Waits until the console page's one event stream is open. */
export async function liveIsOpen(page: Page): Promise<void> {
  try {
    await page.locator('[data-testid="live-status"][data-state="open"]')
      .waitFor({ timeout: SETTLE_MS });
  } catch (error) {
    const state = await page.locator('[data-testid="live-status"]')
      .getAttribute("data-state", { timeout: 1000 }).catch(() => "absent");
    throw new Error(
      `${(error as Error).message}; on ${page.url()} (${await page
        .title()}), the live indicator is ${state}`,
    );
  }
}

/** From a storefront page to the console, through its header's link. */
export async function toConsole(page: Page): Promise<void> {
  await page.getByRole("link", { name: "Console", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/console");
  await liveIsOpen(page);
}

/** Goes to a console page through its link in the console's header. */
export async function openConsolePage(page: Page, key: string): Promise<void> {
  const link = byTestId(page, `nav-${key}`);
  const href = await link.getAttribute("href");
  await link.click();
  await page.waitForURL((url) => url.pathname === href);
  await liveIsOpen(page);
}

/**
 * Flips fault switch `name` on the faults page (opened through the header)
 * and waits until the server's answer shows it in position `on`.
 */
export async function setFault(
  page: Page,
  name: string,
  on: boolean,
): Promise<void> {
  await openConsolePage(page, "faults");
  const toggle = byTestId(page, `fault-${name}`);
  if ((await toggle.isChecked()) === on) {
    throw new Error(`fault ${name} is already ${on ? "on" : "off"}`);
  }
  await toggle.click();
  // The switch is aria-disabled while the PUT is out; enabled and in
  // position means the server said so.
  await page.waitForFunction(
    ([id, want]) => {
      const input = document.querySelector<HTMLInputElement>(
        `[data-testid="${id}"]`,
      );
      return !!input && !input.disabled &&
        input.getAttribute("aria-disabled") !== "true" &&
        input.checked === want;
    },
    [`fault-${name}`, on] as const,
    { timeout: SETTLE_MS },
  );
  const state = await byTestId(page, `fault-state-${name}`).textContent();
  if (state !== (on ? "on" : "off")) {
    throw new Error(`fault ${name} shows ${state} after the flip`);
  }
}

/** A dead letter row as the page shows it. */
export interface DeadLetterRow {
  id: number;
  state: string;
  eventType: string;
  subscriber: string;
  attempts: number;
  lastError: string;
}

/** The rows of the dead letter table, top to bottom. */
export function deadLetterRows(page: Page): Promise<DeadLetterRow[]> {
  return page.$$eval(
    'tr[data-testid^="dead-letter-row-"]',
    (rows) =>
      rows.map((row) => {
        const cells = [...row.querySelectorAll("td")].map((td) =>
          td.textContent?.trim() ?? ""
        );
        // "4", or "52× redriven": the count is the cell's first text node.
        const tries = row.querySelectorAll("td")[5]?.firstChild?.textContent;
        return {
          id: Number(row.getAttribute("data-testid")!.split("-").pop()),
          state: row.getAttribute("data-state") ?? "",
          eventType: cells[2],
          // The id: the cell shows the receiver's label ("Kitchen").
          subscriber: row.getAttribute("data-subscriber") ?? cells[3],
          attempts: Number(tries),
          lastError:
            row.querySelector('[data-testid="last-error"]')?.textContent ?? "",
        };
      }),
  );
}

/**
 * Waits until the dead letter table holds exactly `count` rows in state
 * dead, each with `attempts` attempts (first number of the cell); returns
 * them.
 */
export async function deadLettersShown(
  page: Page,
  count: number,
  attempts: number,
): Promise<DeadLetterRow[]> {
  try {
    await page.waitForFunction(
      ([n, tries]) => {
        const rows = [
          ...document.querySelectorAll('tr[data-testid^="dead-letter-row-"]'),
        ];
        return rows.length === n &&
          rows.every((row) =>
            row.getAttribute("data-state") === "dead" &&
            Number(row.querySelectorAll("td")[5]?.firstChild?.textContent) ===
              tries
          );
      },
      [count, attempts] as const,
      { timeout: SETTLE_MS },
    );
  } catch (error) {
    // What the page shows, and what its JSON twin says now.
    const shown = await deadLetterRows(page);
    const twin = await page.evaluate(() =>
      fetch("/api/console/dead-letters").then((r) => r.text())
    );
    throw new Error(
      `${(error as Error).message}; shown: ${JSON.stringify(shown)}; ` +
        `the API says: ${twin}`,
    );
  }
  return await deadLetterRows(page);
}
