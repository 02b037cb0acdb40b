/**
 * The labs' pages, Fresh-style: `/labs/ledger` and `/labs/queue`, each the
 * twin of its JSON API (routes/api/labs.ts). A run is a form POST that
 * works without JavaScript (the session's CSRF token in `_csrf`, as the
 * console's forms), answered with a 303 to the page, which shows what the
 * run left behind.
 */
import type { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { consolePage } from "../console/_guard.ts";
import { ledgerPage, runLedgerForm } from "./ledger.tsx";
import { queuePage, runQueueForm } from "./queue.tsx";

export function registerLabPages(app: Hono, deps: Deps): void {
  app.get("/labs/ledger", consolePage(ledgerPage(deps)));
  app.post("/labs/ledger/:scenario", consolePage(runLedgerForm(deps)));
  app.get("/labs/queue", consolePage(queuePage(deps)));
  app.post("/labs/queue", consolePage(runQueueForm(deps)));
}
