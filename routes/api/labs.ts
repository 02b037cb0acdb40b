/**
 * The labs' JSON API, the twin of /labs/ledger and /labs/queue. Signed-in
 * visitors only (401 otherwise); every run acts inside the caller's
 * sandbox, and waits its turn at the labs' gate (services/labs/lock.ts):
 * a second run of the same visitor, or a lab with a full line, is a 429
 * with Retry-After.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400, readJson } from "../../kit/http/validate.ts";
import {
  figures,
  findScenario,
  ledgerRows,
  runLedger,
  SCENARIOS,
} from "../../services/labs/ledger.ts";
import {
  lastQueueRun,
  queueLabSchema,
  runQueueLab,
} from "../../services/labs/queue_lab.ts";
import { type Lab, LabBusy, labGate } from "../../services/labs/lock.ts";
import { requireOperator } from "./console.ts";

/** The scenario named in the path, or 404. */
export function scenarioOr404(name: string) {
  const scenario = findScenario(name);
  if (!scenario) {
    throw new HttpError(
      404,
      `no ledger scenario ${JSON.stringify(name.slice(0, 60))}; try one of ${
        SCENARIOS.map((s) => s.name).join(", ")
      }`,
    );
  }
  return scenario;
}

/**
 * Runs `fn` as `sandboxId`'s run of `lab` when the gate lets it; a refusal
 * is a 429 with Retry-After, and nothing of the run happened.
 */
export async function inTurn<T>(
  sandboxId: string,
  lab: Lab,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await labGate.run(sandboxId, lab, fn);
  } catch (error) {
    if (!(error instanceof LabBusy)) throw error;
    throw new HttpError(429, error.message, [], {
      "Retry-After": String(error.retryAfterSeconds),
    });
  }
}

export function labRoutes(deps: Deps) {
  const { sql } = deps;
  const horizon = { replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS };
  return {
    /** `POST /api/labs/ledger/:scenario`: runs it; the rows' figures. */
    async runLedger(c: Context) {
      const { sandboxId } = requireOperator(c);
      const scenario = scenarioOr404(c.req.param("scenario") ?? "");
      return c.json(
        await inTurn(
          sandboxId,
          "ledger",
          () => runLedger(sql, sandboxId, scenario, horizon),
        ),
      );
    },
    /**
     * `GET /api/labs/ledger`: the scenarios, and the rows the last run left
     * behind with their figures.
     */
    async ledger(c: Context) {
      const { sandboxId } = requireOperator(c);
      return c.json({
        scenarios: SCENARIOS.map(({ name, title, broken }) => ({
          name,
          title,
          broken,
        })),
        ...await figures(sql, sandboxId),
        rows: await ledgerRows(sql, sandboxId),
      });
    },
    /** `POST /api/labs/queue`: runs the Queue Lab. */
    async runQueue(c: Context) {
      const { sandboxId } = requireOperator(c);
      const settings = parseOr400(queueLabSchema, await readJson(c.req.raw));
      return c.json(
        await inTurn(
          sandboxId,
          "queue",
          () => runQueueLab(sql, deps.log, sandboxId, settings),
        ),
      );
    },
    /** `GET /api/labs/queue`: the last run, or `{ "run": null }`. */
    async queue(c: Context) {
      const { sandboxId } = requireOperator(c);
      const run = await lastQueueRun(sql, sandboxId);
      return c.json({
        run: run && {
          settings: run.settings,
          ranAt: run.ranAt.toISOString(),
          ...run.result,
        },
      });
    },
  };
}
