/** The page shell shared by the storefront and the console. */
import type { ComponentChildren } from "preact";
import { islandsScriptSrc, islandsStyleHref } from "../kit/http/islands.ts";

/** What a page gives the shell. */
export interface LayoutProps {
  title: string;
  children: ComponentChildren;
  /**
   * The session's CSRF token; when given it goes in
   * `<meta name="csrf-token">`, where islands read it for `X-CSRF-Token`.
   */
  csrfToken?: string;
  /** Links for the header, right of the brand. */
  nav?: ComponentChildren;
  /**
   * Controls for the header, right of the brand, that are not links to
   * pages (the console's search, live indicator and sign-out): outside the
   * nav landmark, so a page whose links are elsewhere has one nav.
   */
  tools?: ComponentChildren;
  /** More for the footer, after its line (the console's API link). */
  footer?: ComponentChildren;
}

/**
 * The HTML document: head, header, main. Loads the one islands bundle, which
 * hydrates whatever islands the page holds and does nothing on a page
 * without any, and its style sheet (the charts' uPlot CSS) before
 * style.css, so that ours has the last word.
 */
export function Layout(props: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {props.csrfToken && (
          <meta
            name="csrf-token"
            content={props.csrfToken}
          />
        )}
        <title>{props.title} · Outbox Bakery</title>
        <link
          rel="icon"
          href="/static/icons/favicon.svg"
          type="image/svg+xml"
        />
        {islandsStyleHref() && (
          <link rel="stylesheet" href={islandsStyleHref()} />
        )}
        <link rel="stylesheet" href="/static/style.css" />
        <script type="module" src={islandsScriptSrc()} />
      </head>
      <body>
        <header class="top">
          <a href="/" class="brand">
            <img
              src="/static/icons/favicon.svg"
              alt=""
              width="28"
              height="28"
            />
            Outbox Bakery
          </a>
          {props.nav && <nav class="top-nav">{props.nav}</nav>}
          {props.tools && <div class="top-tools">{props.tools}</div>}
        </header>
        <main>{props.children}</main>
        <footer class="foot">
          Baked before dawn. Orders are kept, never lost, never doubled.
          {props.footer}
        </footer>
      </body>
    </html>
  );
}
