/**
 * Bad order bodies: a 400 that names the field (415 for a body that is not
 * JSON, 413 for one too large), and nothing written: no order, no key, no
 * message, no session.
 */
import assert from "node:assert/strict";
import { rowCounts, walkthroughOrder, withTestBakery } from "./_app.ts";

const good = walkthroughOrder("key-validation-0001");

/** A copy of the walkthrough order with `change` applied. */
function bad(change: (o: Record<string, unknown>) => void) {
  const order = structuredClone(good) as Record<string, unknown>;
  change(order);
  return order;
}

const items = (o: Record<string, unknown>) =>
  o.items as Record<string, unknown>[];
const customer = (o: Record<string, unknown>) =>
  o.customer as Record<string, unknown>;

/** Each: what is wrong, the body, the path the answer must name. */
const CASES: [string, unknown, string][] = [
  ["an unknown sku", bad((o) => items(o)[0].sku = "croissant"), "items.0.sku"],
  ["qty 0", bad((o) => items(o)[0].qty = 0), "items.0.qty"],
  ["qty 1000", bad((o) => items(o)[0].qty = 1000), "items.0.qty"],
  ["qty 1.5", bad((o) => items(o)[1].qty = 1.5), "items.1.qty"],
  ['qty "two"', bad((o) => items(o)[0].qty = "two"), "items.0.qty"],
  ["no email", bad((o) => delete customer(o).email), "customer.email"],
  [
    "an email that is not one",
    bad((o) => customer(o).email = "ada at example"),
    "customer.email",
  ],
  ["items not an array", bad((o) => o.items = { sku: "x" }), "items"],
  ["no items", bad((o) => o.items = []), "items"],
  [
    "a 10,000-character name",
    bad((o) => customer(o).name = "A".repeat(10_000)),
    "customer.name",
  ],
  [
    "a 10,000-character sku",
    bad((o) => items(o)[0].sku = "b".repeat(10_000)),
    "items.0.sku",
  ],
  ["an unknown fulfilment", bad((o) => o.fulfilment = "drone"), "fulfilment"],
  ["no idempotency key", bad((o) => delete o.idempotencyKey), "idempotencyKey"],
  ["an unknown extra key", bad((o) => o.discountCents = 500), "discountCents"],
  [
    "an unknown key in a line",
    bad((o) => items(o)[0].unitCents = 1),
    "items.0.unitCents",
  ],
  ["an array body", [good], ""],
];

Deno.test("validation: each bad order body is a 400 naming its field, and writes nothing", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    for (const [what, body, path] of CASES) {
      // A new visitor each time: a refused body must not even open a session.
      const client = t.client();
      const answer = await client.json<
        { error: string; issues: { path: string; message: string }[] }
      >("POST", "/api/orders", body);
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer)}`);
      const paths = answer.body.issues.map((i) => i.path);
      assert.ok(
        paths.includes(path),
        `${what}: expected ${path} among ${JSON.stringify(paths)}`,
      );
      assert.ok(
        answer.body.issues.every((i) => i.message.length > 0),
        what,
      );
      assert.ok(answer.body.error.length < 500, `${what}: error too long`);
      assert.equal(client.cookie("bakery_session"), undefined, what);
      assert.deepEqual(await rowCounts(t.sql), before, what);
    }
  });
});

Deno.test("validation: malformed JSON is a 400, another content type a 415, a huge body a 413", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const client = t.client();
    const raw = async (contentType: string, body: string) => {
      const response = await client.fetch("/api/orders", {
        method: "POST",
        headers: { "content-type": contentType },
        body,
      });
      return { status: response.status, body: await response.json() };
    };
    const json = JSON.stringify(good);
    const cases: [string, string, string, number][] = [
      ["malformed JSON", "application/json", '{"items": [', 400],
      ["an empty body", "application/json", "", 400],
      ["text/plain", "text/plain", json, 415],
      ["XML", "application/xml", "<order/>", 415],
      [
        "a body over 64 KiB",
        "application/json",
        JSON.stringify({
          ...good,
          customer: { ...good.customer, name: "A".repeat(70_000) },
        }),
        413,
      ],
    ];
    for (const [what, type, body, status] of cases) {
      const answer = await raw(type, body);
      assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer)}`);
      assert.equal(typeof answer.body.error, "string", what);
      assert.deepEqual(await rowCounts(t.sql), before, what);
    }
    // The same client, a good body: accepted, so the refusals were the body's.
    const placed = await raw("application/json; charset=utf-8", json);
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
  });
});
