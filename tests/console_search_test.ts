/**
 * The console's search through `GET /api/console/search?q=`: an order by
 * its id, its short number, its receipt's number or its customer's email; a
 * message by its id; a delivery by its id or words of its error. Inside the
 * visitor's sandbox only; a bad query is a 400 naming `q`.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersSettle,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  walkthroughOrder,
  withTestBakery,
} from "./_app.ts";

interface ResultJson {
  kind: "order" | "message" | "delivery";
  id: string;
  summary: string;
  href: string;
}

async function searchFor(client: Client, q: string): Promise<ResultJson[]> {
  const { status, body } = await client.json<{ results: ResultJson[] }>(
    "GET",
    `/api/console/search?q=${encodeURIComponent(q)}`,
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body.results;
}

const kinds = (results: ResultJson[]) =>
  results.map((r) => `${r.kind} ${r.id}`).sort();

Deno.test("search: an order by id, short number, receipt number and email; a message by id; deliveries by id and error words; one sandbox only", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Searching operator");
    const order = walkthroughOrder();
    order.customer.email = "grace.hopper@example.com";
    const { orderId } = await placeOrderVia(client, order);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    const [receipt] = await t.at("receipts")<{ number: string }[]>`
      select number from receipts.receipts where order_id = ${orderId}`;
    assert.ok(receipt, "a receipt");

    const short = orderId.slice(-6).toUpperCase();
    for (
      const q of [
        orderId,
        short,
        short.toLowerCase(),
        `#${short}`,
        receipt.number,
        "grace.hopper@",
        "GRACE.HOPPER@example.com",
      ]
    ) {
      const results = await searchFor(client, q);
      const found = results.filter((r) => r.kind === "order");
      assert.deepEqual(found.map((r) => r.id), [orderId], q);
      assert.equal(found[0].href, `/orders/${orderId}`);
      assert.match(found[0].summary, new RegExp(short));
    }

    const [message] = await t.at("orders")<{ message_id: string }[]>`
      select message_id from queue.messages
       where aggregate_id = ${orderId} and type = 'OrderPaid'`;
    const byMessage = await searchFor(client, message.message_id);
    assert.deepEqual(kinds(byMessage), [`message ${message.message_id}`]);
    assert.match(byMessage[0].href, /^\/console\/deliveries\/\d+$/);

    // A dead letter, found by its id and by words of its error.
    await client.json("PUT", "/api/console/faults", { kitchenRefuses: true });
    await placeOrderVia(client);
    const [dead] = await deadLettersSettle(client, 1);
    assert.deepEqual(kinds(await searchFor(client, String(dead.id))), [
      `delivery ${dead.id}`,
    ]);
    const byWords = await searchFor(client, "kitchen REFUSES");
    assert.deepEqual(kinds(byWords), [`delivery ${dead.id}`]);
    assert.equal(byWords[0].href, `/console/deliveries/${dead.id}`);
    assert.deepEqual(await searchFor(client, "nothing like this"), []);
    assert.deepEqual(await searchFor(client, "   "), []);
    // LIKE's wildcards are searched for as themselves.
    assert.deepEqual(await searchFor(client, "%%%"), []);

    // Another sandbox finds none of it.
    const other = t.client();
    await signIn(other, "Other operator");
    for (
      const q of [orderId, short, receipt.number, message.message_id, "refuses"]
    ) {
      assert.deepEqual(await searchFor(other, q), [], q);
    }

    // Bad queries: 400 naming q.
    for (const q of ["x".repeat(201)]) {
      const { status, body } = await client.json<
        { issues: { path: string }[] }
      >(
        "GET",
        `/api/console/search?q=${q}`,
      );
      assert.equal(status, 400);
      assert.deepEqual(body.issues.map((i) => i.path), ["q"]);
    }
    const missing = await client.json<{ issues: { path: string }[] }>(
      "GET",
      "/api/console/search",
    );
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.issues.map((i) => i.path), ["q"]);
    await eventually("signed out: 401", async () => {
      const { status } = await t.client().json(
        "GET",
        "/api/console/search?q=x",
      );
      return status === 401;
    });
  });
});

Deno.test("search: the page shows the results with links; the header box is on every console page", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Page operator");
    const { orderId } = await placeOrderVia(client);
    const short = orderId.slice(-6).toUpperCase();
    const console = await (await client.fetch("/console", {
      headers: { accept: "text/html" },
    })).text();
    assert.match(console, /<form[^>]*action="\/console\/search"/);
    const page = await client.fetch(`/console/search?q=${short}`, {
      headers: { accept: "text/html" },
    });
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, new RegExp(`href="/orders/${orderId}"`));
  });
});
