/**
 * Small statistics for the benchmark: percentiles of latency samples, rates,
 * the slope of a series, and a seeded random generator so that every run
 * makes the same choices (gaps, keys) in the same order.
 */
export { seeded } from "../kit/random.ts";

/** The p-th percentile (0..100) of `values`, nearest-rank; null when empty. */
export function percentile(
  values: readonly number[],
  p: number,
): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export interface Summary {
  n: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** p50, p95, p99, max and mean of `values`. */
export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  return {
    n,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    p99: percentile(values, 99),
    max: n ? Math.max(...values) : null,
    mean: n ? values.reduce((a, b) => a + b, 0) / n : null,
  };
}

/** Least-squares slope of `y` over `x` (units of y per unit of x). */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** Rounds to `digits` significant digits, keeping integers whole. */
export function round(value: number, digits = 3): number {
  if (!isFinite(value) || value === 0) return value;
  if (Math.abs(value) >= 10 ** digits) return Math.round(value);
  const scale = 10 ** (digits - 1 - Math.floor(Math.log10(Math.abs(value))));
  return Math.round(value * scale) / scale;
}

/** Milliseconds elapsed since `t0` (a performance.now() reading). */
export function since(t0: number): number {
  return performance.now() - t0;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
