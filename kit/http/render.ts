/** Server-side rendering of a Preact tree into a full HTML response. */
import type { VNode } from "preact";
import { renderToString } from "preact-render-to-string";

export function html(vnode: VNode, status = 200): Response {
  return new Response("<!doctype html>" + renderToString(vnode), {
    status,
    headers: { "content-type": "text/html; charset=utf-8" },
  });
}
