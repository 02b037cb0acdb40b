/**
 * Adding up per-subscriber rows read from several queues (split mode: one
 * per sender; services/databases.ts). With one queue it returns its rows.
 */

/** One row per subscriber, `add` folding the rows of the same one. */
export function bySubscriber<T extends { subscriber: string }>(
  parts: T[][],
  add: (a: T, b: T) => T,
): T[] {
  const out = new Map<string, T>();
  for (const row of parts.flat()) {
    const seen = out.get(row.subscriber);
    out.set(row.subscriber, seen ? add(seen, row) : row);
  }
  return [...out.values()].sort((a, b) => a.subscriber < b.subscriber ? -1 : 1);
}

/** The earlier of two times, either of which may be missing. */
export const earlier = (a: Date | null, b: Date | null) =>
  a === null ? b : b === null ? a : a < b ? a : b;

/** The later of two times, either of which may be missing. */
export const later = (a: Date | null, b: Date | null) =>
  a === null ? b : b === null ? a : a > b ? a : b;
