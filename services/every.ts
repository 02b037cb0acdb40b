/**
 * A platform job on a timer: the daily wipe's check, retention. Runs `job`
 * `firstMs` after the start, then every `everyMs`. The returned stop clears
 * the timers and waits for a run under way. `job` handles its own errors.
 */
export function every(
  job: () => Promise<unknown>,
  options: { everyMs: number; firstMs: number },
): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = job().catch(() => {});
  };
  const timer = setInterval(run, options.everyMs);
  const first = setTimeout(run, options.firstMs);
  return async () => {
    clearInterval(timer);
    clearTimeout(first);
    await running;
  };
}
