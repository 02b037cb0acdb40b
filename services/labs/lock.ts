/**
 * One lab run at a time in this process. The ledger's relay claims by a
 * switch that only the running sandbox has on, and the Queue Lab's workers
 * claim every sandbox's printer deliveries: both are right only while no
 * other run is going. A run takes about a second, so a visitor who clicks
 * while another's runs waits that long.
 */
let tail: Promise<unknown> = Promise.resolve();

/** Runs `fn` after every run that was asked for before it. */
export function oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const run = tail.then(fn, fn);
  tail = run.catch(() => {});
  return run;
}
