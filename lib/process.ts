/**
 * Process lifetime: start-up errors print one line and exit 1; SIGINT and
 * SIGTERM run the shutdown steps in reverse order of registration (web
 * server, workers, pool, then PostgreSQL), each once, and exit 0. A second
 * signal during shutdown does not skip the steps that stop PostgreSQL.
 *
 * The whole stop is bounded, whatever state the database is in: steps get
 * STEPS_MS together, and one still running then is left behind (logged) so
 * that the next can run; a step registered as `bounded` (stopping PostgreSQL,
 * which ends within its own bound) is always awaited.
 */
import { isConnectionError } from "./db/reserved.ts";
import type { Logger } from "./log/mod.ts";

type Step = () => unknown | Promise<unknown>;
interface Entry {
  step: Step;
  name: string;
  bounded: boolean;
}
const steps: Entry[] = [];
let stopping: Promise<void> | undefined;

/** What the steps that are not `bounded` get, together, at shutdown. */
export const STEPS_MS = 4000;

/** Registers a step to run at shutdown; the last registered runs first. */
export function onShutdown(
  step: Step,
  options: { name?: string; bounded?: boolean } = {},
) {
  steps.push({
    step,
    name: options.name ?? `step ${steps.length + 1}`,
    bounded: options.bounded ?? false,
  });
}

/** Runs every registered step, last first; an error in one does not skip the rest. */
export function shutdown(log: Logger): Promise<void> {
  return stopping ??= (async () => {
    const deadline = Date.now() + STEPS_MS;
    for (const { step, name, bounded } of steps.reverse()) {
      const run = Promise.resolve().then(step).then(
        () => true,
        (error) => {
          log.error("shutdown_step_failed", { step: name, error });
          return true;
        },
      );
      if (bounded) {
        await run;
        continue;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = await Promise.race([
        run,
        new Promise<false>((resolve) => {
          timer = setTimeout(
            () => resolve(false),
            Math.max(0, deadline - Date.now()),
          );
        }),
      ]);
      clearTimeout(timer);
      if (!done) log.warn("shutdown_step_abandoned", { step: name });
    }
    steps.length = 0;
  })();
}

/**
 * A statement whose promise nobody was waiting for any more, failed because
 * its connection went away (the server stopped or restarted): postgres.js
 * rejects every statement that was in flight on the socket. Whatever it was
 * part of is retried by its lease or the next poll, so the process carries
 * on, and the log says which statement it was (postgres.js keeps its text
 * on the error, not enumerable). Once shutdown has begun, every unhandled
 * rejection and uncaught error is logged, and the stop goes on. Before it,
 * any other unhandled rejection ends the process, as Deno ends it by
 * default.
 */
export function survivingConnectionLoss(log: Logger) {
  globalThis.addEventListener("error", (event) => {
    if (!stopping) return;
    event.preventDefault();
    log.error("uncaught_during_shutdown", { error: event.error });
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (stopping) {
      // A step left behind (its time was up) may still fail in pieces, a
      // pool's statements as its server goes: the stop goes on, and its
      // exit says how the stop went, not how what was abandoned ended.
      event.preventDefault();
      log.error("unhandled_during_shutdown", { error: event.reason });
      return;
    }
    if (!isConnectionError(event.reason)) return;
    event.preventDefault();
    const error = event.reason as Error & { query?: unknown };
    log.error("connection_lost_unawaited", {
      error,
      query: typeof error.query === "string" ? error.query : undefined,
    });
  });
}

/**
 * Runs `start`, then waits for SIGINT or SIGTERM. A start-up failure stops
 * what had started and exits 1 with one line that says why. A statement
 * that fails unawaited because the database went away does not end the
 * process (see {@link survivingConnectionLoss}).
 */
export async function runUntilSignal(log: Logger, start: () => Promise<void>) {
  survivingConnectionLoss(log);
  const stop = (signal: string) => {
    log.info("shutdown", { signal });
    shutdown(log).then(() => Deno.exit(0));
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => stop(signal));
  }
  try {
    await start();
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
    log.debug("startup_failed", { error, stack: (error as Error).stack });
    await shutdown(log);
    Deno.exit(1);
  }
}
