/** The page shell shared by the storefront and the console. */
import type { ComponentChildren } from "preact";

export function Layout(
  props: { title: string; children: ComponentChildren },
) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} · Outbox Bakery</title>
        <link rel="stylesheet" href="/static/style.css" />
      </head>
      <body>
        <header class="top">
          <a href="/" class="brand">Outbox Bakery</a>
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}
