/**
 * The console's header: one link per page, the search box, the live
 * indicator, who is signed in, and the sign-out button. Signing out is a form POST (it changes state),
 * carrying the session's CSRF token in `_csrf` as the session middleware
 * requires of form posts.
 */
import { Island } from "../islands/_registry.ts";

/** The console's pages, as the nav names them. */
export const CONSOLE_PAGES = [
  { key: "overview", href: "/console", label: "Overview" },
  { key: "outbox", href: "/console/outbox", label: "Outbox" },
  { key: "deliveries", href: "/console/deliveries", label: "Deliveries" },
  { key: "dead-letters", href: "/console/dead-letters", label: "Dead letters" },
  { key: "closure", href: "/console/closure", label: "Closure" },
  { key: "receivers", href: "/console/receivers", label: "Receivers" },
  {
    key: "order-violations",
    href: "/console/order-violations",
    label: "Order violations",
  },
  { key: "kitchen", href: "/console/kitchen", label: "Kitchen" },
  { key: "faults", href: "/console/faults", label: "Faults" },
  { key: "actions", href: "/console/actions", label: "Operator log" },
  { key: "ledger", href: "/labs/ledger", label: "Ledger lab" },
  { key: "queue", href: "/labs/queue", label: "Queue Lab" },
  { key: "how", href: "/how-it-works", label: "How it's built" },
] as const;

/** Which page is open: a key of `CONSOLE_PAGES`, or the search results. */
export type ConsolePageKey = typeof CONSOLE_PAGES[number]["key"] | "search";

/** Props: the open page, the operator's name and the session's token. */
export interface ConsoleNavProps {
  current: ConsolePageKey;
  name: string;
  csrfToken: string;
  /** What the search box holds (on the search page, the query). */
  query?: string;
}

/** Links to every console page, the live indicator and sign-out. */
export function ConsoleNav(
  { current, name, csrfToken, query }: ConsoleNavProps,
) {
  return (
    <div class="console-nav">
      <ul class="console-links" data-testid="console-nav">
        {CONSOLE_PAGES.map((page) => (
          <li key={page.key}>
            <a
              href={page.href}
              aria-current={page.key === current ? "page" : undefined}
              data-testid={`nav-${page.key}`}
            >
              {page.label}
            </a>
          </li>
        ))}
      </ul>
      <div class="console-who">
        {/* A GET form: a search is a link that can be shared. */}
        <form
          method="get"
          action="/console/search"
          class="console-search"
          role="search"
        >
          <input
            type="search"
            name="q"
            value={query ?? ""}
            maxLength={200}
            placeholder="Order, message, receipt, email, error"
            aria-label="Search the console"
            data-testid="search-box"
          />
          <button type="submit" class="button small" data-testid="search-go">
            Search
          </button>
        </form>
        <Island name="live_status" props={{}} />
        <span
          class="console-name"
          data-testid="operator-name"
          title="Signed in"
        >
          {name}
        </span>
        <form method="post" action="/sign-out" class="inline-form">
          <input type="hidden" name="_csrf" value={csrfToken} />
          <button type="submit" class="button small" data-testid="sign-out">
            Sign out
          </button>
        </form>
      </div>
    </div>
  );
}
