/**
 * Cross-site form posts against the console, in a real browser. Another
 * server (another origin) serves pages whose forms submit themselves to a
 * console action, and the signed-in operator's browser opens them:
 *
 * - same host, another port: same site, so the browser sends the session
 *   cookie along; the foreign Origin gets the post refused (403);
 * - another host name (`localhost` for `127.0.0.1`): another site, so the
 *   SameSite=Lax cookie stays home, and the post is refused all the same.
 *
 * The dead letter is still dead and untouched, and the session still signed
 * in, afterwards.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  byTestId,
  deadLetterRows,
  deadLettersShown,
  e2e,
  liveIsOpen,
  openConsolePage,
  placeOrder,
  setFault,
  SETTLE_MS,
  signedInPage,
  toConsole,
  withBrowser,
} from "./_browser.ts";

const OPERATOR = "Late shift";

/** A page that posts a form to `action` as soon as it loads. */
function attackPage(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields).map(([name, value]) =>
    `<input type="hidden" name="${name}" value="${value}">`
  ).join("");
  return `<!doctype html><title>Win a cake</title>
<form id="f" method="post" action="${action}">${inputs}</form>
<script>document.getElementById("f").submit();</script>`;
}

/**
 * Opens `attackUrl` in `page` and returns the bakery's answer to the form
 * post it makes to `target`, with the request's Origin and whether the
 * request carried the session cookie.
 */
async function submitFrom(page: Page, attackUrl: string, target: string) {
  const answer = page.waitForResponse(
    (r) => r.url() === target && r.request().method() === "POST",
    { timeout: SETTLE_MS },
  );
  await page.goto(attackUrl);
  const response = await answer;
  const headers = await response.request().allHeaders();
  return {
    status: response.status(),
    origin: headers["origin"],
    withCookie: /\bbakery_session=/.test(headers["cookie"] ?? ""),
  };
}

e2e.test("console in the browser: cross-site form posts are refused and change nothing", async () => {
  await withBrowser(async ({ bakery, browser, base }) => {
    const pages = new Map<string, string>();
    const attacker = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => {
        const body = pages.get(new URL(request.url).pathname);
        return body === undefined
          ? new Response("not found", { status: 404 })
          : new Response(body, {
            headers: { "content-type": "text/html; charset=utf-8" },
          });
      },
    );
    try {
      const { page } = await signedInPage(browser, base, OPERATOR);
      await setFault(page, "kitchenRefuses", true);
      await placeOrder(page, base);
      await toConsole(page);
      await openConsolePage(page, "dead-letters");
      const [dead] = await deadLettersShown(page, 1, 4);
      // What the queue holds of it, to compare after the attacks: the
      // kitchen's OrderPlaced, in orders' queue.
      const record = async () => {
        const [row] = await bakery.at("orders")`
          select d.state, d.attempts, d.redrives,
                 (select count(*)::int from queue.actions a
                   where a.delivery_id = d.id) as actions
            from queue.deliveries d where d.id = ${dead.id}`;
        return { ...row };
      };
      const before = await record();
      assert.deepEqual(before, {
        state: "dead",
        attempts: 4,
        redrives: 0,
        actions: 0,
      });

      const redrive = new URL(
        `api/console/dead-letters/${dead.id}/redrive`,
        base,
      ).href;
      const signOut = new URL("sign-out", base).href;
      // A guessed token, and none at all: neither may pass.
      pages.set("/redrive", attackPage(redrive, { _csrf: "guess" }));
      pages.set("/redrive-bare", attackPage(redrive, {}));
      pages.set("/sign-out", attackPage(signOut, { _csrf: "guess" }));

      const port = attacker.addr.port;
      const sameSite = `http://127.0.0.1:${port}`;
      const otherSite = `http://localhost:${port}`;
      const tries = [
        [`${sameSite}/redrive`, redrive, sameSite, true],
        [`${sameSite}/redrive-bare`, redrive, sameSite, true],
        [`${sameSite}/sign-out`, signOut, sameSite, true],
        [`${otherSite}/redrive`, redrive, otherSite, false],
        [`${otherSite}/sign-out`, signOut, otherSite, false],
      ] as const;
      for (const [url, target, origin, withCookie] of tries) {
        const got = await submitFrom(page, url, target);
        assert.deepEqual(
          got,
          { status: 403, origin, withCookie },
          `${url} -> ${target}`,
        );
      }

      // Nothing changed: the dead letter is dead, as it was ...
      assert.deepEqual(await record(), before);
      // ... and the operator still signed in, on the same session.
      await page.goto(`${base}console/dead-letters`);
      assert.equal(new URL(page.url()).pathname, "/console/dead-letters");
      await liveIsOpen(page);
      assert.equal(
        await byTestId(page, "operator-name").textContent(),
        OPERATOR,
      );
      const rows = await deadLetterRows(page);
      assert.deepEqual(
        rows.map((r) => [r.id, r.state, r.attempts]),
        [[dead.id, "dead", 4]],
      );

      // The same action from the console itself works: the refusals above
      // were about where the posts came from. The kitchen still refuses, so
      // the one attempt a redrive grants fails, and the row is dead again
      // (it may show "redriven" only for a moment in between).
      await byTestId(page, `redrive-${dead.id}`).click();
      const [redriven] = await deadLettersShown(page, 1, 5);
      assert.equal(redriven.id, dead.id);
      assert.match(
        await byTestId(page, `dead-letter-row-${dead.id}`).textContent() ?? "",
        /1× redriven/,
      );
      assert.deepEqual(await record(), {
        state: "dead",
        attempts: 5,
        redrives: 1,
        actions: 1,
      });
      await page.context().close();
    } finally {
      await attacker.shutdown();
    }
  });
});
