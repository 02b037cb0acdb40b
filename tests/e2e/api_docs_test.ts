/**
 * The API reference in a real browser: from the console's footer to
 * `/api/docs`, where Swagger UI (served by the app, no CDN) shows every
 * operation of the OpenAPI document under the app's Content-Security-Policy
 * as it is, with no violation of it and no script error, and answers a
 * "Try it out" with the operator's own session.
 */
import assert from "node:assert/strict";
import { bakeryOpenApi } from "../../routes/api/openapi.ts";
import {
  e2e,
  screenshot,
  scriptErrors,
  SETTLE_MS,
  signedInPage,
  withBrowser,
} from "./_browser.ts";

/** How many operations the document holds. */
function operationCount(): number {
  const doc = bakeryOpenApi() as { paths: Record<string, object> };
  return Object.values(doc.paths).reduce(
    (sum, item) => sum + Object.keys(item).length,
    0,
  );
}

e2e.test("api docs: the console links a reference that works under the CSP", async () => {
  await withBrowser(async ({ browser, base }) => {
    const { page } = await signedInPage(browser, base, "Docs reader");
    const errors = scriptErrors(page);
    const refused: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) {
        refused.push(message.text());
      }
    });
    const failed: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) {
        failed.push(`${response.status()} ${response.url()}`);
      }
    });

    await page.getByRole("link", { name: "the API reference" }).click();
    await page.waitForURL(`${base}api/docs`);
    const operations = page.locator(".opblock");
    await operations.nth(operationCount() - 1).waitFor({ timeout: SETTLE_MS });
    assert.equal(await operations.count(), operationCount());

    // Try it out: the session's own sandbox answers, signed in.
    const session = page.locator("#operations-session-getApiSession");
    await session.locator(".opblock-summary").click();
    await session.getByRole("button", { name: "Try it out" }).click();
    await session.getByRole("button", { name: "Execute" }).click();
    const answer = session.locator(
      ".live-responses-table tr.response .response-col_status",
    )
      .first();
    await answer.waitFor({ timeout: SETTLE_MS });
    assert.equal((await answer.textContent())?.trim(), "200");
    await screenshot(page, "api_docs");

    assert.deepEqual(refused, []);
    assert.deepEqual(errors, []);
    assert.deepEqual(failed, []);
  });
});
