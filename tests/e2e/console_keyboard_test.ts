/**
 * The console by keyboard alone: the fault switches flip with Space, and the
 * dead letters are selected (Space), redriven (Enter) and refused (Enter,
 * a typed reason, Enter; Escape backs out), every control reached with Tab
 * and Shift+Tab and showing where the focus is. The effect is read in the
 * rows the server keeps (faults, deliveries, operator actions) and in the
 * table's rows; after each action the focus lands on what it did, so the
 * next Tab goes on from there. The delivery's own page does the same.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { TestBakery } from "../_app.ts";
import { queueOfDelivery } from "../../services/databases.ts";
import { until } from "../_main.ts";
import {
  byTestId,
  deadLettersShown,
  e2e,
  liveIsOpen,
  openConsolePage,
  orderStateIs,
  payWith,
  placeOrder,
  SETTLE_MS,
  toConsole,
  withConsolePage,
} from "./_browser.ts";

const OPERATOR = "Keyboard shift";

/** The `data-testid` of the focused element, or its tag when it has none. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return el?.getAttribute("data-testid") ?? el?.tagName.toLowerCase() ?? "";
  });

/**
 * Presses Tab (Shift+Tab with `back`) until the element `testid` has the
 * focus, and checks that the focus shows there (`:focus-visible` with an
 * outline); fails, naming what was passed, when 100 presses do not reach it.
 */
async function tabTo(page: Page, testid: string, back = false) {
  const passed: string[] = [];
  for (let i = 0; i < 100; i++) {
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
    const at = await focused(page);
    if (at === testid) {
      const shown = await page.evaluate(() => {
        const el = document.activeElement!;
        const style = getComputedStyle(el);
        return el.matches(":focus-visible") && style.outlineStyle !== "none" &&
          parseFloat(style.outlineWidth) > 0;
      });
      assert.ok(shown, `${testid} has the focus but does not show it`);
      return;
    }
    passed.push(at);
  }
  throw new Error(
    `Tab never reached ${testid}; it passed ${passed.join(", ")}`,
  );
}

/** Whether fault `name` is on in the sandbox's row, as the server keeps it. */
async function faultOn(t: TestBakery, name: string): Promise<boolean> {
  const [row] = await t.sql<{ enabled: boolean }[]>`
    select enabled from platform.faults where name = ${name}`;
  return row?.enabled ?? false;
}

/** The delivery's state and the operator actions on it, oldest first. */
async function deliveryRow(t: TestBakery, id: number) {
  // In the queue that holds the delivery (its sender's in split mode).
  const queue = t.at(queueOfDelivery(id) ?? "orders");
  const [d] = await queue<{ state: string; refused_reason: string | null }[]>`
    select state, refused_reason from queue.deliveries where id = ${id}`;
  const actions = await queue<{ action: string; actor: string }[]>`
    select action, actor from queue.actions where delivery_id = ${id}
     order by id`;
  return {
    state: d.state,
    reason: d.refused_reason,
    actions: actions.map((a) => `${a.action} by ${a.actor}`),
  };
}

/** Flips the kitchen's fault with the keyboard, and waits for the answer. */
async function flipKitchenFault(page: Page, t: TestBakery, on: boolean) {
  await openConsolePage(page, "faults");
  await tabTo(page, "fault-kitchenRefuses");
  await page.keyboard.press("Space");
  await page.waitForFunction(
    (want) => {
      const input = document.querySelector<HTMLInputElement>(
        '[data-testid="fault-kitchenRefuses"]',
      );
      return !!input && input.getAttribute("aria-disabled") !== "true" &&
        input.checked === want;
    },
    on,
    { timeout: SETTLE_MS },
  );
  assert.equal(
    await byTestId(page, "fault-state-kitchenRefuses").textContent(),
    on ? "on" : "off",
  );
  assert.equal(await faultOn(t, "kitchenRefuses"), on);
  // The switch keeps the focus through its request.
  assert.equal(await focused(page), "fault-kitchenRefuses");
}

e2e.test("console by keyboard: fault switches, and select, redrive and refuse dead letters", async () => {
  await withConsolePage({
    operator: OPERATOR,
  }, async ({ bakery: t, page, base }) => {
    await flipKitchenFault(page, t, true);

    // One order paid, one only placed: three kitchen messages die.
    const paid = await placeOrder(page, base);
    await page.getByRole("link", { name: "Pay", exact: true }).click();
    await payWith(page, "4242 4242 4242 4242");
    await orderStateIs(page, "paid");
    const placed = await placeOrder(page, base, { name: "Bo Baker" });
    // The fault stays on until all three have used up their attempts: a
    // quick browser turned it off while the last order's were retried.
    await until(
      "three dead kitchen deliveries",
      async () =>
        // The kitchen's deliveries: of orders' messages, in its queue.
        (await t.at("orders")<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries
           where subscriber = 'kitchen' and state = 'dead'`)[0].n === 3,
      SETTLE_MS,
    );
    await toConsole(page);
    await flipKitchenFault(page, t, false);
    await openConsolePage(page, "dead-letters");
    const dead = await deadLettersShown(page, 3, 4);
    // Which dead letter is which: its event type, and its order's link.
    const orderOf = new Map<number, string>();
    for (const d of dead) {
      const href = await byTestId(page, `dead-letter-row-${d.id}`)
        .locator('a[href^="/orders/"]').getAttribute("href");
      orderOf.set(d.id, href!.split("/").pop()!);
    }
    const idOf = (order: string, type: string) =>
      dead.find((d) => d.eventType === type && orderOf.get(d.id) === order)!
        .id;
    const placedOfPlaced = idOf(placed, "OrderPlaced");
    const placedOfPaid = idOf(paid, "OrderPlaced");
    const paidOfPaid = idOf(paid, "OrderPaid");
    // From the top of the page, as a person arriving on it.
    await page.reload();
    await liveIsOpen(page);

    // Select all, and none again, with Space on the header's checkbox.
    await tabTo(page, "select-all");
    await page.keyboard.press("Space");
    for (const d of dead) {
      assert.ok(await byTestId(page, `select-${d.id}`).isChecked());
    }
    await page.keyboard.press("Space");
    for (const d of dead) {
      assert.equal(await byTestId(page, `select-${d.id}`).isChecked(), false);
    }

    // Redrive one row with Enter: the placed order's card is made at last.
    await tabTo(page, `redrive-${placedOfPlaced}`);
    await page.keyboard.press("Enter");
    await page.locator(
      `[data-testid="dead-letter-row-${placedOfPlaced}"][data-state="redriven"]`,
    ).waitFor({ timeout: SETTLE_MS });
    assert.equal(await focused(page), `outcome-${placedOfPlaced}`);
    await until(
      "the redriven delivery to be done",
      async () => (await deliveryRow(t, placedOfPlaced)).state === "done",
      SETTLE_MS,
    );
    assert.deepEqual((await deliveryRow(t, placedOfPlaced)).actions, [
      `redrive by ${OPERATOR}`,
    ]);

    // Refuse one: Enter opens the form with the focus in its reason, Escape
    // backs out to the button, Enter again, a reason, Enter refuses.
    await tabTo(page, `refuse-${placedOfPaid}`);
    await page.keyboard.press("Enter");
    const form = `refuse-form-${placedOfPaid}`;
    await byTestId(page, `${form}-reason`).waitFor();
    assert.equal(await focused(page), `${form}-reason`);
    await page.keyboard.press("Escape");
    await byTestId(page, `${form}-reason`).waitFor({ state: "detached" });
    assert.equal(await focused(page), `refuse-${placedOfPaid}`);
    await page.keyboard.press("Enter");
    await byTestId(page, `${form}-reason`).waitFor();
    // Enter with no reason is not a refusal; the focus stays in the field.
    await page.keyboard.press("Enter");
    await byTestId(page, `${form}-error`).waitFor();
    assert.equal(await focused(page), `${form}-reason`);
    await page.keyboard.type("Baked by hand, keyboard only");
    await page.keyboard.press("Enter");
    await page.locator(
      `[data-testid="dead-letter-row-${placedOfPaid}"][data-state="refused"]`,
    ).waitFor({ timeout: SETTLE_MS });
    assert.equal(await focused(page), `outcome-${placedOfPaid}`);
    assert.deepEqual(await deliveryRow(t, placedOfPaid), {
      state: "refused",
      reason: "Baked by hand, keyboard only",
      actions: [`refuse by ${OPERATOR}`],
    });

    // Select the last with Space, back to the toolbar with Shift+Tab, and
    // redrive the selection with Enter. Its order's card was refused above,
    // so its preview says the kitchen would not apply it: the redrive waits,
    // focus on its confirmation, and a second Enter sends it. The kitchen
    // answers 409 and the row comes back dead.
    await tabTo(page, `select-${paidOfPaid}`);
    await page.keyboard.press("Space");
    assert.ok(await byTestId(page, `select-${paidOfPaid}`).isChecked());
    assert.match(
      await byTestId(page, "dead-letter-count").textContent() ?? "",
      /, 1 selected$/,
    );
    await tabTo(page, "redrive-selected", true);
    await page.keyboard.press("Enter");
    await byTestId(page, "redrive-waits").waitFor();
    assert.equal(await focused(page), "redrive-waits-go");
    assert.match(
      await byTestId(page, "redrive-preview").textContent() ?? "",
      /Kitchen/,
    );
    await page.keyboard.press("Enter");
    await byTestId(page, "dead-letter-notice").waitFor();
    assert.equal(await focused(page), "dead-letter-notice");
    assert.equal(
      await byTestId(page, "dead-letter-notice").textContent(),
      "Redrove 1 dead letter.",
    );
    await until(
      "the selected delivery to be redriven",
      async () =>
        (await deliveryRow(t, paidOfPaid)).actions.join() ===
          `redrive by ${OPERATOR}`,
      SETTLE_MS,
    );
    // Nothing else was touched by the selection.
    assert.deepEqual((await deliveryRow(t, placedOfPlaced)).actions, [
      `redrive by ${OPERATOR}`,
    ]);
    assert.equal((await deliveryRow(t, placedOfPaid)).state, "refused");

    // On its own page, once it is dead again: Escape backs out of the
    // refuse form to its button, and Enter on Redrive lands on the notice.
    await until(
      "the redriven delivery to be dead again",
      async () => (await deliveryRow(t, paidOfPaid)).state === "dead",
      SETTLE_MS,
    );
    await page.goto(`${base}console/deliveries/${paidOfPaid}`);
    await liveIsOpen(page);
    await tabTo(page, "refuse");
    await page.keyboard.press("Enter");
    await byTestId(page, "refuse-form-reason").waitFor();
    assert.equal(await focused(page), "refuse-form-reason");
    await page.keyboard.press("Escape");
    await byTestId(page, "refuse-form-reason").waitFor({ state: "detached" });
    assert.equal(await focused(page), "refuse");
    await tabTo(page, "redrive", true);
    await page.keyboard.press("Enter");
    await byTestId(page, "delivery-notice").waitFor();
    assert.equal(await focused(page), "delivery-notice");
    await until(
      "the second redrive to be kept",
      async () => (await deliveryRow(t, paidOfPaid)).actions.length === 2,
      SETTLE_MS,
    );
  });
});
