/**
 * Process lifetime: start-up errors print one line and exit 1; SIGINT and
 * SIGTERM run the shutdown steps in reverse order of registration (web
 * server, workers, pool, then PostgreSQL), each once, and exit 0. A second
 * signal during shutdown does not skip the steps that stop PostgreSQL.
 */
import type { Logger } from "./log/mod.ts";

type Step = () => unknown | Promise<unknown>;
const steps: Step[] = [];
let stopping: Promise<void> | undefined;

/** Registers a step to run at shutdown; the last registered runs first. */
export function onShutdown(step: Step) {
  steps.push(step);
}

/** Runs every registered step, last first; an error in one does not skip the rest. */
export function shutdown(log: Logger): Promise<void> {
  return stopping ??= (async () => {
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (error) {
        log.error("shutdown_step_failed", { error });
      }
    }
    steps.length = 0;
  })();
}

/**
 * Runs `start`, then waits for SIGINT or SIGTERM. A start-up failure stops
 * what had started and exits 1 with one line that says why.
 */
export async function runUntilSignal(log: Logger, start: () => Promise<void>) {
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
