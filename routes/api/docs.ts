/**
 * `GET /api/openapi.json` (the document, routes/api/openapi.ts) and
 * `GET /api/docs`, a readable page of it: Swagger UI, served by the app from
 * the npm package `swagger-ui-dist` (no CDN: the page works where the site
 * does). Its script and style are files under `/api/docs/`, and the page's
 * own start-up is a file too, as is `console.css` (docs.css beside this
 * module), which dresses Swagger in the console's colours and fonts so that
 * the reference reads as a page of the console. The page runs under the app's
 * Content-Security-Policy as it is (no inline script or style), which
 * tests/e2e/api_docs_test.ts checks in a browser.
 */
import type { Context, Hono } from "hono";
// The package's own way to find its files on disk (its getAbsoluteFSPath).
import swaggerUiDir from "swagger-ui-dist/absolute-path.js";
import { bakeryOpenApi } from "./openapi.ts";

/** Starts Swagger UI on the page: a file, as the CSP runs no inline script. */
const INIT_JS = `"use strict";
// validatorUrl null: the badge would ask a validator on the internet.
window.ui = SwaggerUIBundle({
  url: "/api/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outbox Bakery API</title>
<link rel="icon" href="/static/icons/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/api/docs/swagger-ui.css">
<link rel="stylesheet" href="/api/docs/console.css">
</head>
<body>
<nav class="swagger-ui"><p class="wrapper"><a href="/console">Back to the console</a> · <a href="/api/openapi.json">openapi.json</a></p></nav>
<div id="swagger-ui"></div>
<script src="/api/docs/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>
`;

/** The files the page loads, by name: the package's, and the start-up. */
const ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "init.js": "text/javascript; charset=utf-8",
};

/** A day: the files change only with the pinned package's version. */
const ASSET_CACHE = "public, max-age=86400";

const loaded = new Map<string, Promise<Uint8Array>>();

/** The console's colours and fonts for Swagger UI: a file of ours. */
const CONSOLE_CSS = new URL("./docs.css", import.meta.url);

/** A package file, read once and kept (the bundle is 1.7 MB; read on use). */
function assetBytes(name: string): Promise<Uint8Array> {
  let bytes = loaded.get(name);
  if (!bytes) {
    bytes = name === "init.js"
      ? Promise.resolve(new TextEncoder().encode(INIT_JS))
      : name === "console.css"
      ? Deno.readFile(CONSOLE_CSS)
      : Deno.readFile(`${swaggerUiDir()}/${name}`);
    // A failed read is not kept: the next request tries again.
    bytes.catch(() => loaded.delete(name));
    loaded.set(name, bytes);
  }
  return bytes;
}

async function asset(c: Context): Promise<Response> {
  const name = c.req.param("file") ?? "";
  const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!type) return c.notFound();
  const body = await assetBytes(name);
  return new Response(body as Uint8Array<ArrayBuffer>, {
    headers: { "Content-Type": type, "Cache-Control": ASSET_CACHE },
  });
}

/**
 * Registers `GET /api/openapi.json`, `GET /api/docs` and the page's files.
 *
 * @example
 * ```ts
 * registerApiDocs(app);
 * ```
 */
export function registerApiDocs(app: Hono): void {
  app.get("/api/openapi.json", (c) => c.json(bakeryOpenApi()));
  app.get("/api/docs", (c) => c.html(PAGE));
  app.get("/api/docs/:file", asset);
}
