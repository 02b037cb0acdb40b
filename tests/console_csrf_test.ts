/**
 * Console actions are state-changing requests: a foreign Origin, or neither
 * a same-site Origin nor the session's X-CSRF-Token, is a 403 that changes
 * nothing; the token from `GET /api/session` lets a script without an Origin
 * through. A form post needs its `_csrf` field.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersOf,
  deadLettersSettle,
  eventually,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { countInEveryQueue, inEveryQueue } from "./_console_ops.ts";
import { queueOfDelivery } from "../services/databases.ts";

async function send(
  client: Client,
  method: string,
  path: string,
  init: { json?: unknown; body?: string; headers?: Record<string, string> } =
    {},
) {
  const response = await client.fetch(path, { method, ...init });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

Deno.test("console CSRF: foreign or missing Origin without the token is a 403; the token works", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Token operator");
    const on = await send(client, "PUT", "/api/console/faults", {
      json: { kitchenRefuses: true },
    });
    assert.equal(on.status, 200);
    await placeOrderVia(client);
    const [dead] = await deadLettersSettle(client, 1);

    const faults = async () =>
      (await send(client, "GET", "/api/console/faults")).body as Record<
        string,
        boolean
      >;
    /** What a refused request must leave as it was. */
    const snapshot = async () => ({
      faults: await faults(),
      dead: await deadLettersOf(client),
      actions: await countInEveryQueue(
        t.sql,
        (sql) =>
          sql<{ n: number }[]>`select count(*)::int as n from queue.actions`,
      ),
    });
    const before = await snapshot();
    assert.equal(before.faults.kitchenRefuses, true);
    assert.deepEqual(before.dead.map((d) => d.id), [dead.id]);

    const { body: session } = await send(client, "GET", "/api/session");
    const token = session.csrfToken as string;
    assert.ok(token.length >= 16, "a CSRF token");

    const evil = client.withOrigin("https://evil.example");
    const bare = client.withOrigin(null);
    const refused: [string, Client, Record<string, string>][] = [
      ["foreign Origin", evil, {}],
      ["foreign Origin, even with the token", evil, { "x-csrf-token": token }],
      ["no Origin, no token", bare, {}],
      ["no Origin, a wrong token", bare, { "x-csrf-token": `x${token}` }],
    ];
    for (const [what, who, headers] of refused) {
      const put = await send(who, "PUT", "/api/console/faults", {
        json: { kitchenRefuses: false },
        headers,
      });
      assert.equal(put.status, 403, `PUT faults, ${what}`);
      const redrive = await send(
        who,
        "POST",
        `/api/console/dead-letters/${dead.id}/redrive`,
        { headers },
      );
      assert.equal(redrive.status, 403, `POST redrive, ${what}`);
      const refuse = await send(
        who,
        "POST",
        `/api/console/dead-letters/${dead.id}/refuse`,
        { json: { reason: "cross-site" }, headers },
      );
      assert.equal(refuse.status, 403, `POST refuse, ${what}`);
      for (
        const [path, json] of [
          ["/api/console/dead-letters/redrive", { subscriber: "kitchen" }],
          [`/api/console/dead-letters/${dead.id}/supersede`, {
            payload: {},
            reason: "cross-site",
          }],
          [`/api/console/jobs/01900000-0000-7000-8000-000000000000/cancel`, {}],
        ] as const
      ) {
        const answer = await send(who, "POST", path, { json, headers });
        assert.equal(answer.status, 403, `POST ${path}, ${what}`);
      }
      assert.deepEqual(await snapshot(), before, what);
    }

    // A form post without `_csrf`, even from this site: 403.
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const formPut = await send(client, "PUT", "/api/console/faults", {
      body: "kitchenRefuses=false",
      headers: form,
    });
    assert.equal(formPut.status, 403);
    const formRedrive = await send(
      client,
      "POST",
      `/api/console/dead-letters/${dead.id}/redrive`,
      { body: "ids=1", headers: form },
    );
    assert.equal(formRedrive.status, 403);
    const wrongField = await send(
      client,
      "POST",
      `/api/console/dead-letters/${dead.id}/redrive`,
      { body: `_csrf=x${token}`, headers: form },
    );
    assert.equal(wrongField.status, 403);
    assert.deepEqual(await snapshot(), before, "form posts");

    // The session's token and no Origin: accepted.
    const put = await send(bare, "PUT", "/api/console/faults", {
      json: { kitchenRefuses: false },
      headers: { "x-csrf-token": token },
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.kitchenRefuses, false);
    assert.equal((await faults()).kitchenRefuses, false);
    const redrive = await send(
      bare,
      "POST",
      `/api/console/dead-letters/${dead.id}/redrive`,
      { headers: { "x-csrf-token": token } },
    );
    assert.equal(redrive.status, 202, JSON.stringify(redrive.body));
    await eventually("the redriven delivery to be done", async () => {
      const [row] = await t.at(queueOfDelivery(dead.id) ?? "orders")<
        { state: string }[]
      >`select state from queue.deliveries where id = ${dead.id}`;
      return row.state === "done";
    });
    const actions = await inEveryQueue(
      t.sql,
      (sql) =>
        sql<{ action: string; actor: string }[]>`
        select action, actor from queue.actions order by id`,
    );
    assert.deepEqual(actions.map((a) => [a.action, a.actor]), [[
      "redrive",
      "Token operator",
    ]]);
  });
});
