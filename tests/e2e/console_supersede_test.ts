/**
 * Superseding a dead letter in the browser, on its delivery page: the form
 * starts from the dead letter's payload, refuses what is not JSON, and,
 * for a message its receiver applied after all (acknowledgements lost),
 * says "already applied" in words, sends nothing, and offers the refusal
 * that closes it instead.
 */
import assert from "node:assert/strict";
import {
  byTestId,
  deadLettersShown,
  e2e,
  openConsolePage,
  placeOrder,
  setFault,
  SETTLE_MS,
  toConsole,
  withConsolePage,
} from "./_browser.ts";
import { countInEveryQueue } from "../_console_ops.ts";

e2e.test("console in the browser: superseding an applied dead letter says already applied and sends nothing", async () => {
  await withConsolePage(
    { operator: "Day shift" },
    async ({ page, base, bakery }) => {
      await setFault(page, "lostAcks", true);
      await placeOrder(page, base);
      await toConsole(page);
      await openConsolePage(page, "dead-letters");
      // OrderPlaced to kitchen, schedule and customers: all applied, none
      // acknowledged.
      const rows = await deadLettersShown(page, 3, 4);
      const dead = rows.find((r) => r.subscriber === "customers")!;
      assert.ok(dead, JSON.stringify(rows));
      await setFault(page, "lostAcks", false);
      // OrderPlaced's deliveries: in orders' queue.
      const [{ message_id: messageId }] = await bakery.at("orders")<
        { message_id: string }[]
      >`select message_id from queue.deliveries where id = ${dead.id}`;

      await page.goto(new URL(`/console/deliveries/${dead.id}`, base).href);
      await byTestId(page, "supersede").click();
      const form = "supersede-form";
      const payload = byTestId(page, `${form}-payload`);
      const original = JSON.parse(await payload.inputValue());
      assert.equal(typeof original.orderId, "string");

      // Not JSON: said at once, nothing sent.
      await payload.fill("{ not json");
      await byTestId(page, `${form}-reason`).fill("lost acknowledgement");
      await byTestId(page, `${form}-confirm`).click();
      assert.match(
        await byTestId(page, `${form}-error`).textContent() ?? "",
        /^The payload is not JSON/,
      );

      // The receiver has it: 409, shown as "already applied".
      await payload.fill(JSON.stringify(original, null, 2));
      await byTestId(page, `${form}-confirm`).click();
      const alert = page.locator(
        `[data-testid="${form}-error"][data-applied="true"]`,
      );
      await alert.waitFor({ timeout: SETTLE_MS });
      const said = await alert.textContent() ?? "";
      assert.match(said, /^Already applied: nothing was sent\./);
      assert.ok(
        said.includes(`Customers has message ${messageId} in its inbox.`),
        said,
      );
      assert.equal(await alert.getAttribute("role"), "alert");
      assert.equal(
        await countInEveryQueue(bakery.sql, (sql) =>
          sql<{ n: number }[]>`
          select count(*)::int as n from queue.supersessions`),
        0,
      );
      assert.equal(
        await byTestId(page, "delivery-detail").getAttribute("data-state"),
        "dead",
      );

      // What closes it is a refusal: the form offers it.
      await byTestId(page, `${form}-refuse-instead`).click();
      await byTestId(page, "refuse-form-reason").waitFor();
      assert.equal(await byTestId(page, form).count(), 0);
    },
  );
});
