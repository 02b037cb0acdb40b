/**
 * The operator console's pages, registered in one place. Each page is
 * server-rendered from the read models in services/console/ and is the twin
 * of a JSON endpoint under /api/console (routes/api/console.ts); islands
 * keep it live. `createApp` calls `registerConsolePages`.
 */
import { actionsPage } from "./actions.tsx";
import type { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { consolePage as guard, type ConsoleRender } from "./_guard.ts";
import { alertBoard } from "../../services/console/alert_episodes.ts";
import { signInRoutes } from "./sign_in.tsx";
import { overviewPage } from "./index.tsx";
import { outboxPage } from "./outbox.tsx";
import { deliveriesPage } from "./deliveries.tsx";
import { deliveryPage } from "./delivery.tsx";
import { deadLettersPage } from "./dead_letters.tsx";
import { closurePage } from "./closure.tsx";
import { closureRowsPage } from "./closure_rows.tsx";
import { kitchenPage } from "./kitchen.tsx";
import { faultsPage } from "./faults.tsx";
import { searchPage } from "./search.tsx";
import { receiversPage } from "./receivers.tsx";
import { workersPage } from "./workers.tsx";
import { orderViolationsPage } from "./order_violations.tsx";

/**
 * Registers `/sign-in`, `/sign-out` and every `/console` page on `app`.
 * Signed out (or a guest), a console page answers 303 to `/sign-in`.
 *
 * @example
 * ```ts
 * const app = new Hono();
 * registerConsolePages(app, deps);
 * ```
 */
export function registerConsolePages(app: Hono, deps: Deps): void {
  const session = signInRoutes(deps);
  app.get("/sign-in", session.page);
  app.post("/sign-in", session.submit);
  app.post("/sign-out", session.signOut);
  // Every page opens with the sandbox's alerts in its banner.
  const consolePage = (render: ConsoleRender) =>
    guard(
      render,
      (sandboxId) => alertBoard(deps.sql, sandboxId, deps.config),
    );

  app.get("/console", consolePage(overviewPage(deps)));
  app.get("/console/outbox", consolePage(outboxPage(deps)));
  app.get("/console/deliveries", consolePage(deliveriesPage(deps)));
  app.get("/console/deliveries/:id", consolePage(deliveryPage(deps)));
  app.get("/console/dead-letters", consolePage(deadLettersPage(deps)));
  app.get("/console/closure", consolePage(closurePage(deps)));
  app.get("/console/closure/rows", consolePage(closureRowsPage(deps)));
  app.get("/console/kitchen", consolePage(kitchenPage(deps)));
  app.get("/console/faults", consolePage(faultsPage(deps)));
  app.get("/console/actions", consolePage(actionsPage(deps)));
  app.get("/console/search", consolePage(searchPage(deps)));
  app.get("/console/receivers", consolePage(receiversPage(deps)));
  app.get("/console/workers", consolePage(workersPage(deps)));
  app.get(
    "/console/order-violations",
    consolePage(orderViolationsPage(deps)),
  );
}
