/**
 * The console's navigation, in two parts. The side bar (`ConsoleSideNav`)
 * holds one link per page, in groups, so that an operator finds the dead
 * letters without reading thirteen links (River UI and ServicePulse group
 * theirs the same way). The header bar (`ConsoleBar`) holds the search
 * box, the live indicator, who is signed in, and the sign-out button.
 * Signing out is a form POST (it changes state), carrying the session's
 * CSRF token in `_csrf` as the session middleware requires of form posts.
 */
import { Island } from "../islands/_registry.ts";

/** The console's pages, in the side bar's groups. */
export const CONSOLE_GROUPS = [
  {
    key: "messages",
    label: "Messages",
    pages: [
      { key: "overview", href: "/console", label: "Overview" },
      { key: "outbox", href: "/console/outbox", label: "Outbox" },
      { key: "deliveries", href: "/console/deliveries", label: "Deliveries" },
      {
        key: "dead-letters",
        href: "/console/dead-letters",
        label: "Dead letters",
      },
      { key: "closure", href: "/console/closure", label: "Closure" },
      { key: "workers", href: "/console/workers", label: "Workers" },
    ],
  },
  {
    key: "receivers",
    label: "Receivers",
    pages: [
      { key: "receivers", href: "/console/receivers", label: "Receivers" },
      { key: "kitchen", href: "/console/kitchen", label: "Kitchen" },
      { key: "faults", href: "/console/faults", label: "Faults" },
      {
        key: "order-violations",
        href: "/console/order-violations",
        label: "Order violations",
      },
    ],
  },
  {
    key: "operators",
    label: "Operators",
    pages: [
      { key: "actions", href: "/console/actions", label: "Operator log" },
    ],
  },
  {
    key: "learn",
    label: "Learn",
    pages: [
      { key: "ledger", href: "/labs/ledger", label: "Ledger lab" },
      { key: "queue", href: "/labs/queue", label: "Queue lab" },
      { key: "how", href: "/how-it-works", label: "How it's built" },
    ],
  },
] as const;

/** Which page is open: a key of a page of `CONSOLE_GROUPS`, or the search results. */
export type ConsolePageKey =
  | typeof CONSOLE_GROUPS[number]["pages"][number]["key"]
  | "search";

/** Props of the side bar: the open page, and the sandbox's dead letters. */
export interface ConsoleSideNavProps {
  current: ConsolePageKey;
  /** How many dead letters wait, shown on their link (Sidekiq's bar does). */
  deadLetters?: number;
}

/** The label of the open page, for the menu's button on a phone. */
function currentLabel(current: ConsolePageKey): string {
  for (const group of CONSOLE_GROUPS) {
    for (const page of group.pages) if (page.key === current) return page.label;
  }
  return "Search";
}

/**
 * The side bar: one list per group, labelled by the group's name, and the
 * open page marked with `aria-current="page"`. The lists sit in a
 * `<details>`: on a wide screen the stylesheet keeps it open and hides its
 * button; on a phone it is a Menu button that names the open page, so a
 * page starts with its own content instead of thirteen links (a native
 * element: it works before and without the bundle).
 */
export function ConsoleSideNav({ current, deadLetters }: ConsoleSideNavProps) {
  return (
    <nav
      class="console-side"
      aria-label="Console pages"
      data-testid="console-nav"
    >
      <details class="console-menu" data-testid="console-menu">
        <summary class="console-menu-button">
          <span>Menu</span>
          <span class="muted">{currentLabel(current)}</span>
          {deadLetters
            ? <span class="nav-count">{deadLetters} dead</span>
            : null}
        </summary>
        <div class="console-menu-groups">
          {CONSOLE_GROUPS.map((group) => (
            <div class="console-side-group" key={group.key}>
              <p class="console-side-label" id={`console-group-${group.key}`}>
                {group.label}
              </p>
              <ul
                class="console-links"
                aria-labelledby={`console-group-${group.key}`}
              >
                {group.pages.map((page) => (
                  <li key={page.key}>
                    <a
                      href={page.href}
                      aria-current={page.key === current ? "page" : undefined}
                      data-testid={`nav-${page.key}`}
                    >
                      {page.label}
                      {page.key === "dead-letters" &&
                        deadLetters !== undefined &&
                        (
                          <span
                            class={deadLetters > 0
                              ? "nav-count nav-count-bad"
                              : "nav-count"}
                            data-testid="nav-dead-letters-count"
                            aria-label={`, ${deadLetters} waiting`}
                          >
                            {deadLetters}
                          </span>
                        )}
                    </a>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </div>
      </details>
    </nav>
  );
}

/** Props of the header bar: the operator's name and the session's token. */
export interface ConsoleBarProps {
  name: string;
  csrfToken: string;
  /** What the search box holds (on the search page, the query). */
  query?: string;
}

/** The header bar: search, the live indicator, the operator, sign-out. */
export function ConsoleBar({ name, csrfToken, query }: ConsoleBarProps) {
  return (
    <div class="console-bar">
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
          placeholder="Order code, id, email, error"
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
  );
}
