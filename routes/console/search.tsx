/**
 * `GET /console/search?q=`: what the header's search box found, each with a
 * link to its page. Twin of `GET /api/console/search?q=`.
 */
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import { ConsolePage } from "../_console_page.tsx";
import { search } from "../../services/console/search.ts";
import { searchQuery } from "../api/console.ts";
import type { ConsoleRender } from "./_guard.ts";

const KIND = { order: "Order", message: "Message", delivery: "Delivery" };

/** Renders the results of one query. */
export function searchPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const { q } = parseOr400(
      searchQuery,
      { q: c.req.query("q") ?? "" },
      "query",
    );
    const results = await search(sql, operator.sandboxId, q);
    return html(
      <ConsolePage
        title="Search"
        current="search"
        operator={operator}
        query={q}
        lead="An order by its id, its short number, its receipt's number or its customer's email; a message by its id; a delivery by its id or words of its last error."
      >
        <section class="panel" data-testid="search-results">
          {!q
            ? <p class="muted">Type something in the search box.</p>
            : results.length === 0
            ? (
              <p class="muted" data-testid="search-empty">
                Nothing in this sandbox matches <code>{q}</code>.
              </p>
            )
            : (
              <ul class="search-results">
                {results.map((r) => (
                  <li
                    key={`${r.kind} ${r.id}`}
                    data-testid={`result-${r.kind}`}
                  >
                    <span class="search-kind">{KIND[r.kind]}</span>
                    <a href={r.href}>{r.summary}</a>
                  </li>
                ))}
              </ul>
            )}
        </section>
      </ConsolePage>,
    );
  };
}
