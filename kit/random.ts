/**
 * A seeded pseudo-random generator (mulberry32): small and well spread, and
 * the same seed gives the same sequence, so a benchmark waits the same gaps
 * and a drill repeats its schedule of faults.
 */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
