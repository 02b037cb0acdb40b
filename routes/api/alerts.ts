/**
 * The alerts banner's JSON: the episodes of the sandbox's alerts (firing,
 * recovering, resolved) with the dead letters' count, and acknowledging
 * one. Beside `GET /api/console/alerts` (what fires now, unchanged).
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400 } from "../../kit/http/validate.ts";
import {
  acknowledgeAlert,
  alertBoard,
} from "../../services/console/alert_episodes.ts";
import { requireOperator } from "./console.ts";

const episodeParam = z.object({
  id: z.string().regex(/^\d{1,18}$/, "an alert's id").transform(Number),
});

/** `GET /api/console/alert-board`, `POST /api/console/alerts/:id/acknowledge`. */
export function alertRoutes(deps: Deps) {
  const { sql } = deps;
  return {
    board: async (c: Context) => {
      const { sandboxId } = requireOperator(c);
      return c.json(await alertBoard(sql, sandboxId, deps.config));
    },
    acknowledge: async (c: Context) => {
      const { sandboxId, actor } = requireOperator(c);
      const { id } = parseOr400(
        episodeParam,
        { id: c.req.param("id") },
        "path",
      );
      const episode = await acknowledgeAlert(sql, sandboxId, id, actor);
      if (!episode) {
        throw new HttpError(404, "no alert to acknowledge by that id");
      }
      deps.feed.emitLocal(sandboxId);
      return c.json(episode);
    },
  };
}
