/**
 * The OpenAPI document (routes/api/openapi.ts): valid OpenAPI 3.1 by the
 * specification's own JSON Schemas (@seriousme/openapi-schema-validator),
 * with every `$ref` resolved; every route the app registers under `/api`
 * (and the health probe, the metrics and the Stripe webhook) is in it and
 * nothing else is; its request bodies are the schemas the routes validate
 * with; and it is served, with its page and the page's files. Answers
 * against the document are checked where tests get them (tests/_openapi.ts).
 */
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { z } from "zod";
import { createApp } from "../app.tsx";
import { bakeryOpenApi } from "../routes/api/openapi.ts";
import { openApiPath } from "../kit/http/openapi.ts";
import { placeOrderSchema } from "../services/orders/schema.ts";
import { bulkSchema } from "../routes/api/console.ts";
import { testDeps, walkthroughOrder, withTestBakery } from "./_app.ts";

type Doc = {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> };
};

/** The routes the document describes: the JSON API and its neighbours. */
const documented = (path: string) =>
  (path.startsWith("/api/") &&
    // The viewer's script and style files, not part of the API.
    path !== "/api/docs/:file") ||
  ["/health", "/metrics", "/webhooks/stripe"].includes(path);

Deno.test("openapi: the document is valid OpenAPI 3.1 and every $ref resolves", async () => {
  const validator = new Validator();
  const result = await validator.validate(
    structuredClone(bakeryOpenApi()) as Record<string, unknown>,
  );
  assert.equal(validator.version, "3.1");
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  // Throws on a $ref to nothing.
  assert.ok(validator.resolveRefs());
});

Deno.test("openapi: every route of the app is in the document, and only those", async () => {
  await withTestBakery((t) => {
    const routes = createApp(testDeps(t.sql)).routes
      .filter((r) => r.method !== "ALL" && documented(r.path))
      .map((r) => `${r.method.toLowerCase()} ${openApiPath(r.path)}`);
    const doc = bakeryOpenApi() as unknown as Doc;
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`)
    );
    assert.deepEqual(
      [...new Set(routes)].sort(),
      operations.sort(),
      "a route missing from the document, or an operation without a route",
    );
    for (
      const path of [
        "/api/console/checkout-events",
        "/api/console/outbox/release",
      ]
    ) {
      assert.ok(doc.paths[path], path);
    }
    return Promise.resolve();
  });
});

Deno.test("openapi: request bodies are the schemas the routes validate with", () => {
  const doc = bakeryOpenApi() as unknown as Doc;
  const asInput = (schema: z.ZodType) => {
    const { $schema: _, ...rest } = z.toJSONSchema(schema, {
      io: "input",
      unrepresentable: "any",
    });
    return rest;
  };
  assert.deepEqual(
    doc.components.schemas.PlaceOrder,
    asInput(placeOrderSchema),
  );
  assert.deepEqual(doc.components.schemas.BulkRedrive, asInput(bulkSchema));
  const place = doc.paths["/api/orders"].post as {
    requestBody: { content: Record<string, { schema: unknown }> };
  };
  assert.deepEqual(place.requestBody.content["application/json"].schema, {
    $ref: "#/components/schemas/PlaceOrder",
  });
});

Deno.test("openapi: the document, its page and the page's files are served", async () => {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    const doc = await client.json("GET", "/api/openapi.json");
    assert.equal(doc.status, 200);
    assert.deepEqual(doc.body, bakeryOpenApi());

    const page = await client.fetch("/api/docs");
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    // The page runs under the app's policy as it is (no inline script).
    assert.match(
      page.headers.get("content-security-policy") ?? "",
      /script-src 'self';/,
    );
    const html = await page.text();
    const files = [...html.matchAll(/(?:src|href)="(\/api\/docs\/[^"]+)"/g)]
      .map((m) => m[1]);
    assert.deepEqual(files.sort(), [
      "/api/docs/console.css",
      "/api/docs/init.js",
      "/api/docs/swagger-ui-bundle.js",
      "/api/docs/swagger-ui.css",
    ]);
    for (const file of files) {
      const response = await client.fetch(file);
      assert.equal(response.status, 200, file);
      assert.match(
        response.headers.get("content-type") ?? "",
        file.endsWith(".css") ? /^text\/css/ : /^text\/javascript/,
      );
      assert.ok((await response.arrayBuffer()).byteLength > 0, file);
    }
    // Only those files: nothing else of the package, nor of the disk.
    for (const file of ["package.json", "..%2F..%2Fdeno.json", "index.html"]) {
      const { status, body } = await client.json("GET", `/api/docs/${file}`);
      assert.equal(status, 404, file);
      assert.match(String(body.error), /no route/);
    }
  });
});

Deno.test("openapi: error answers keep the document's error shape", async () => {
  await withTestBakery(async (t) => {
    // Every json() answer below is checked against the document.
    const client = t.client({ checkAnswers: true });
    const signedOut = await client.json("GET", "/api/session");
    assert.equal(signedOut.status, 401);
    const order = walkthroughOrder();
    const bad = await client.json("POST", "/api/orders", {
      ...order,
      items: [{ sku: "cardamom-bun", qty: 0 }],
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.issues, [
      { path: "items.0.qty", message: "at least 1" },
    ]);
    const operatorsOnly = await client.json("GET", "/api/console/outbox");
    assert.equal(operatorsOnly.status, 401);
    const crossSite = await client.withOrigin("http://elsewhere.example")
      .json("POST", "/api/orders", order);
    assert.equal(crossSite.status, 403);
    const placed = await client.json("POST", "/api/orders", order);
    assert.equal(placed.status, 201);
    const again = await client.json("POST", "/api/orders", {
      ...order,
      customer: { ...order.customer, name: "Someone else" },
    });
    assert.equal(again.status, 409);
    const unknown = await client.json("GET", "/api/orders/not-an-order");
    assert.equal(unknown.status, 404);
    const nowhere = await client.json("GET", "/api/nowhere");
    assert.equal(nowhere.status, 404);
  });
});
