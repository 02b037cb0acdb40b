import assert from "node:assert/strict";
import { h } from "preact";
import { renderToString } from "preact-render-to-string";
import {
  buildIslands,
  createIsland,
  PROPS_ATTR,
  serializeProps,
} from "../kit/http/islands.ts";

function Echo(props: { text: string; n: number }) {
  return h("p", { class: "echo" }, props.text);
}

const Island = createIsland({ echo: Echo });

/** The text of the props script that follows the island's wrapper. */
function propsJson(html: string): string {
  const open = `<script type="application/json" ${PROPS_ATTR}>`;
  const start = html.indexOf(open);
  assert.ok(start >= 0, `no props script in ${html}`);
  const end = html.indexOf("</script>", start);
  return html.slice(start + open.length, end);
}

Deno.test("islands: props cannot close the script or open a comment", () => {
  const text = "</script><script>alert(1)</script><!-- \u2028\u2029 & > end";
  const html = renderToString(
    h("main", null, h(Island, { name: "echo", props: { text, n: 7 } })),
  );
  assert.ok(!html.includes("</script><script>"), html);
  assert.ok(!html.includes("alert(1)</script>"), html);
  assert.ok(!html.includes("<!--"), html);
  // Exactly one closing tag: the props script's own.
  assert.equal(html.split("</script>").length, 2, html);
  const json = propsJson(html);
  assert.ok(!/[<>&\u2028\u2029]/.test(json), json);
  assert.deepEqual(JSON.parse(json), { text, n: 7 });
});

Deno.test("islands: the wrapper names the island and holds its HTML", () => {
  const html = renderToString(
    h(Island, { name: "echo", props: { text: "hi", n: 1 } }),
  );
  assert.match(
    html,
    /^<div data-island="echo"><p class="echo">hi<\/p><\/div><script /,
  );
});

Deno.test("islands: serializeProps round-trips through JSON.parse", () => {
  const value = { a: "<b>&</b>", list: [1, "\u2028"], nested: { x: null } };
  assert.deepEqual(JSON.parse(serializeProps(value)), value);
  assert.equal(serializeProps(undefined), "{}");
});

Deno.test("islands: buildIslands writes a non-empty browser bundle", async () => {
  const dir = await Deno.makeTempDir({ prefix: "islands-build-" });
  try {
    const outFile = `${dir}/islands.js`;
    const build = await buildIslands({ outFile });
    const code = await Deno.readTextFile(outFile);
    assert.ok(code.length > 1000, `bundle is ${code.length} bytes`);
    assert.equal(build.bytes, new TextEncoder().encode(code).byteLength);
    assert.match(build.version, /^[0-9a-f]{12}$/);
    // The build half (Deno.Command) must not have been bundled for the browser.
    assert.ok(!code.includes("Deno.Command"), "bundle references Deno");
    // The CSS the entry imports (uPlot's) is a style sheet beside it.
    const css = await Deno.readTextFile(`${dir}/islands.css`);
    assert.match(css, /\.uplot/);
    assert.equal(build.cssFile, `${dir}/islands.css`);
    assert.match(build.cssVersion ?? "", /^[0-9a-f]{12}$/);
    // No temporary file is left beside the bundle.
    const left = [];
    for await (const entry of Deno.readDir(dir)) left.push(entry.name);
    assert.deepEqual(left.sort(), ["islands.css", "islands.js"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
