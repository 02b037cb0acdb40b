/**
 * The console walkthrough of issue 5 in a real browser, against the whole
 * bakery on a test database: sign in, make the kitchen refuse, order and pay
 * in the storefront, watch the kitchen's two messages die after three
 * retries, redrive them (the wrong one first), and end with the card
 * confirmed once and every obligation closed. Then a screenshot of every
 * page goes to tests/artifacts/ (not committed). It runs twice: on the
 * PostgreSQL queue, and over JetStream (ignored, with the reason printed,
 * when no NATS answers).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { TestBakery } from "../_app.ts";
import { StreamNames } from "../../lib/carriers/jetstream/mod.ts";
import { ROUTING } from "../../services/routing.ts";
import { natsMissing, TEST_NATS_URL, testStream } from "../_nats.ts";
import {
  byTestId,
  deadLetterRows,
  deadLettersShown,
  e2e,
  liveIsOpen,
  openConsolePage,
  orderStateIs,
  payWith,
  placeOrder,
  screenshot,
  setFault,
  SETTLE_MS,
  signedInPage,
  toConsole,
  withBrowser,
} from "./_browser.ts";

const OPERATOR = "Night shift";

/** Waits until the row of dead letter `id` is dead with an error matching. */
async function deadAgainWith(page: Page, id: number, error: RegExp) {
  await page.waitForFunction(
    ([testid, source]) => {
      const row = document.querySelector(`[data-testid="${testid}"]`);
      const said = row?.querySelector('[data-testid="last-error"]')
        ?.textContent ?? "";
      return row?.getAttribute("data-state") === "dead" &&
        new RegExp(source).test(said);
    },
    [`dead-letter-row-${id}`, error.source] as const,
    { timeout: SETTLE_MS },
  );
}

/** Waits until the closure page's totals read `want` (state -> count). */
async function closureTotalsAre(page: Page, want: Record<string, number>) {
  try {
    await page.waitForFunction(
      (expected) =>
        Object.entries(expected).every(([state, n]) =>
          document.querySelector(`[data-testid="closure-total-${state}"]`)
            ?.getAttribute("data-count") === String(n)
        ),
      want,
      { timeout: SETTLE_MS },
    );
  } catch (error) {
    const seen = await page.$$eval(
      '[data-testid^="closure-total-"]',
      (cells) =>
        cells.map((c) => `${c.getAttribute("data-testid")}=${c.textContent}`),
    );
    throw new Error(`${(error as Error).message}; totals: ${seen.join(", ")}`);
  }
}

e2e.test("console walkthrough in the browser: the kitchen refuses, the operator redrives, everything closes", async () => {
  await walkthrough("console-walkthrough");
});

// The same walkthrough with a database per service (docs/scale.md): every
// page it opens reads each service's database, and the redrives act in the
// orders service's queue.
e2e.test("console walkthrough in the browser with a database per service: the kitchen refuses, the operator redrives, everything closes", async () => {
  await walkthrough("console-walkthrough-split", {
    SERVICE_DATABASES: "split",
    QUEUE: "postgres",
  });
});

// And so over JetStream, with a stream per sender.
e2e.test(
  "console walkthrough in the browser with a database per service over JetStream",
  async () => {
    await walkthrough("console-walkthrough-split-jetstream", {
      SERVICE_DATABASES: "split",
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: testStream(),
    });
  },
);

// The same walkthrough over the second transport, on the run's nats-server
// and a stream of its own (removed when the bakery stops): the dead letters, the
// redrives through the broker and the closure read the same. It needs both
// the browser and NATS.
e2e.test(
  "console walkthrough in the browser over JetStream: the kitchen refuses, the operator redrives, everything closes",
  async () => {
    const stream = testStream();
    await walkthrough("console-walkthrough-jetstream", {
      // One database: it reads the one stream that carries every sender's
      // messages (the split variant above has a stream per sender).
      SERVICE_DATABASES: "shared",
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: stream,
    }, async (bakery) => {
      const health = await fetch(new URL("/health", bakery.url));
      assert.deepEqual(await health.json(), {
        status: "ok",
        database: "up",
        queue: "jetstream",
        broker: "up",
        cluster: {
          server: new URL(TEST_NATS_URL).host,
          name: null,
          servers: [],
          replicas: 1,
        },
      });
      // The stream has one message per delivery, and one more per redrive,
      // on the kitchen's subjects only: OrderPlaced redriven once, OrderPaid
      // twice; all of them on the lanes of the walkthrough's one sandbox.
      const nc = await connect({ servers: TEST_NATS_URL });
      try {
        const info = await (await jetstreamManager(nc)).streams.info(stream, {
          subjects_filter: ">",
        });
        const names = new StreamNames(stream);
        const sandboxes = new Set(
          Object.keys(info.state.subjects ?? {}).map((s) => s.split(".")[3]),
        );
        assert.equal(sandboxes.size, 1, [...sandboxes].join(", "));
        const [sandbox] = sandboxes;
        const want: Record<string, number> = {};
        for (const type of ["OrderPlaced", "PaymentSucceeded", "OrderPaid"]) {
          for (const s of ROUTING[type]) {
            want[names.subject(s, sandbox, type)] = 1;
          }
        }
        want[names.subject("kitchen", sandbox, "OrderPlaced")] += 1;
        want[names.subject("kitchen", sandbox, "OrderPaid")] += 2;
        assert.deepEqual(info.state.subjects, want);
      } finally {
        await nc.close();
      }
    });
  },
  natsMissing,
);

/**
 * The walkthrough on a bakery started with `env`; screenshots are named
 * `<prefix>-<page>`; `afterwards` looks at the bakery before it stops.
 */
async function walkthrough(
  prefix: string,
  env: Record<string, string> = {},
  afterwards?: (bakery: TestBakery) => Promise<void>,
) {
  await withBrowser(async ({ bakery, browser, base }) => {
    // Sign in, and make the kitchen answer 503 to everything.
    const { page, errors } = await signedInPage(browser, base, OPERATOR);
    await setFault(page, "kitchenRefuses", true);

    // Two cardamom buns and a country loaf, paid with the test card.
    const orderId = await placeOrder(page, base, {
      onPage: (which) => screenshot(page, `${prefix}-${which}`),
    });
    await orderStateIs(page, "placed");
    await page.getByRole("link", { name: "Pay", exact: true }).click();
    await page.waitForURL(/\/pay$/);
    await screenshot(page, `${prefix}-pay`);
    await payWith(page, "4242 4242 4242 4242");
    // Paid, although the kitchen refuses: payment does not wait for it.
    await orderStateIs(page, "paid");

    // After three retries the kitchen's two messages are dead letters.
    await toConsole(page);
    await openConsolePage(page, "dead-letters");
    const dead = await deadLettersShown(page, 2, 4);
    assert.deepEqual(
      dead.map((d) => [d.subscriber, d.eventType]).sort(),
      [["kitchen", "OrderPaid"], ["kitchen", "OrderPlaced"]],
    );
    for (const d of dead) {
      assert.match(d.lastError, /^Kitchen answered 503\b/);
      assert.equal(
        await byTestId(page, `dead-letter-row-${d.id}`)
          .locator(`a[href="/orders/${orderId}"]`).count(),
        1,
      );
    }
    const placed = dead.find((d) => d.eventType === "OrderPlaced")!;
    const paid = dead.find((d) => d.eventType === "OrderPaid")!;

    await setFault(page, "kitchenRefuses", false);
    await openConsolePage(page, "dead-letters");

    // The wrong one first: OrderPaid before the kitchen has the card is
    // "not yet" (409), and it comes back as a dead letter.
    await byTestId(page, `redrive-${paid.id}`).click();
    await deadAgainWith(
      page,
      paid.id,
      new RegExp(`\\b409\\b.*no card for order ${orderId}`),
    );
    const again = await deadLetterRows(page);
    assert.deepEqual(
      again.map((d) => [d.id, d.state, d.attempts]).sort(),
      [[placed.id, "dead", 4], [paid.id, "dead", 5]].sort(),
    );

    // Then in order: OrderPlaced, and once the kitchen has it, OrderPaid.
    await byTestId(page, `redrive-${placed.id}`).click();
    await page.locator(
      `[data-testid="dead-letter-row-${placed.id}"][data-state="redriven"]`,
    ).waitFor();
    await byTestId(page, `dead-letter-row-${placed.id}`)
      .locator(`a[href="/console/deliveries/${placed.id}"]`).click();
    await page.waitForURL(new RegExp(`/console/deliveries/${placed.id}$`));
    await page.locator('[data-testid="delivery-detail"][data-state="done"]')
      .waitFor({ timeout: SETTLE_MS });
    await openConsolePage(page, "dead-letters");
    assert.deepEqual(
      (await deadLetterRows(page)).map((d) => [d.id, d.state]),
      [[paid.id, "dead"]],
    );
    await byTestId(page, `redrive-${paid.id}`).click();
    await page.locator(
      `[data-testid="dead-letter-row-${paid.id}"][data-state="redriven"]`,
    ).waitFor();

    // The kitchen board: the card, once, confirmed.
    await openConsolePage(page, "kitchen");
    await page.locator(
      `[data-testid="kitchen-column-confirmed"] [data-testid="kitchen-card-${orderId}"][data-state="confirmed"]`,
    ).waitFor({ timeout: SETTLE_MS });
    assert.equal(
      await page.locator('[data-testid^="kitchen-card-"][data-state]').count(),
      1,
    );

    // Closure: nothing owed, nothing in flight, nothing dead; every one of
    // the 10 obligations (3 OrderPlaced, 6 OrderPaid, 1 PaymentSucceeded)
    // closed, the kitchen's two among them.
    await openConsolePage(page, "closure");
    await closureTotalsAre(page, {
      owed: 0,
      inFlight: 0,
      acceptedUnacked: 0,
      dead: 0,
      refused: 0,
      mismatch: 0,
      closed: 10,
    });
    assert.equal(
      await byTestId(page, "closure-cell-kitchen-closed").getAttribute(
        "data-count",
      ),
      "2",
    );
    assert.equal(await byTestId(page, "closure-alarm").count(), 0);

    // The OrderPaid delivery's story: four 503s, the 409, then 200, and
    // two redrives by the operator.
    await openConsolePage(page, "deliveries");
    await page.locator(`a[href="/console/deliveries/${paid.id}"]`).first()
      .click();
    await page.waitForURL(new RegExp(`/console/deliveries/${paid.id}$`));
    await liveIsOpen(page);
    assert.equal(
      await page.locator('[data-testid="delivery-detail"]').getAttribute(
        "data-state",
      ),
      "done",
    );
    const statuses = await page.$$eval(
      '[data-testid^="attempt-row-"]',
      (rows) => rows.map((r) => r.querySelectorAll("td")[2].textContent),
    );
    assert.deepEqual(statuses, ["503", "503", "503", "503", "409", "200"]);
    const actions = await page.$$eval(
      '[data-testid^="action-row-"]',
      (rows) =>
        rows.map((r) =>
          [...r.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent)
        ),
    );
    assert.deepEqual(actions, [
      ["redrive", OPERATOR],
      ["redrive", OPERATOR],
    ]);
    await screenshot(page, `${prefix}-delivery`);

    // A screenshot of every other page, as it ends.
    const keys = [
      "overview",
      "outbox",
      "deliveries",
      "dead-letters",
      "closure",
      "kitchen",
      "faults",
    ];
    for (const key of keys) {
      await openConsolePage(page, key);
      await screenshot(page, `${prefix}-${key}`);
    }
    await openConsolePage(page, "closure");
    await byTestId(page, "closure-cell-kitchen-closed").click();
    await page.waitForURL(/\/console\/closure\/rows\?/);
    await liveIsOpen(page);
    assert.equal(
      await page.locator('[data-testid^="closure-item-"]').count(),
      2,
    );
    await screenshot(page, `${prefix}-closure-rows`);
    await openConsolePage(page, "dead-letters");
    await byTestId(page, "dead-letters-empty").waitFor();

    await page.goto(`${base}orders/${orderId}`);
    await orderStateIs(page, "paid");
    await page.getByTestId("receipt-number").waitFor({ timeout: SETTLE_MS });
    await screenshot(page, `${prefix}-order`);

    // Signing out ends on the sign-in page, which now asks again.
    await toConsole(page);
    await byTestId(page, "sign-out").click();
    await page.waitForURL(/\/sign-in$/);
    await byTestId(page, "sign-in-form").waitFor();
    await screenshot(page, `${prefix}-sign-in`);
    await page.goto(`${base}console`);
    await page.waitForURL(/\/sign-in\?next=%2Fconsole$/);

    assert.deepEqual(errors, []);
    await page.context().close();
    await afterwards?.(bakery);
  }, env);
}
