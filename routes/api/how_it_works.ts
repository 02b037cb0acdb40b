/**
 * The How it's built page's JSON twins: the whole page
 * (`GET /api/how-it-works`, readable without a session: then no sandbox's
 * figures), what a paid order costs (`GET /api/how-it-works/costs`) and the
 * walkthrough's checklist (`GET /api/how-it-works/try-it`), both of the
 * caller's sandbox (401 without a session). Nothing here writes.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { costs } from "../../services/how/costs.ts";
import { howItWorks } from "../../services/how/page.ts";
import { tryIt } from "../../services/how/try_it.ts";
import { requireSession } from "./session.ts";

/** One sandbox's figures: never kept by a cache. */
function fresh(response: Response): Response {
  response.headers.set("cache-control", "no-store");
  return response;
}

export function howItWorksRoutes(deps: Deps) {
  const { sql, config } = deps;
  return {
    page: async (c: Context) => {
      const session = c.get("session");
      return fresh(
        c.json(await howItWorks(sql, config, session?.sandboxId ?? null)),
      );
    },
    costs: async (c: Context) => {
      const { sandboxId } = requireSession(c);
      return fresh(c.json(await costs(sql, sandboxId)));
    },
    tryIt: async (c: Context) => {
      const { sandboxId } = requireSession(c);
      return fresh(c.json(await tryIt(sql, sandboxId)));
    },
  };
}
