/**
 * What the benchmark measured of the same order with and without its outbox
 * row (`deno task bench`, the write scenario): orders per second at 8
 * clients and CPU per order. Read from bench/results.json when it is there;
 * otherwise null, and the page leaves the comparison out. Only these two
 * figures exist without the outbox: the benchmark stores no rows, bytes or
 * latency of such an order.
 */
import { fileURLToPath } from "node:url";
import { z } from "zod";

const RESULTS = fileURLToPath(
  new URL("../../bench/results.json", import.meta.url),
);

const figure = z.object({
  name: z.string(),
  value: z.number(),
  unit: z.string(),
});

const results = z.object({
  finishedAt: z.string().optional(),
  code: z.object({ commit: z.string() }).partial().optional(),
  scenarios: z.object({
    write: z.object({
      figures: z.array(figure),
      params: z.object({
        cpuUsPerOp: z.record(
          z.string(),
          z.object({ bench: z.number(), postgres: z.number() }),
        ).optional(),
      }).optional(),
    }),
  }),
});

/** One side of the comparison. */
export interface WriteFigures {
  ordersPerSecond: number | null;
  /** CPU µs per order: the client and PostgreSQL together. */
  cpuUsPerOrder: number | null;
}

/** The benchmark's comparison, or null where it has not been run. */
export interface BenchmarkComparison {
  commit: string | null;
  finishedAt: string | null;
  withOutbox: WriteFigures;
  withoutOutbox: WriteFigures;
}

const WITH = "orders_8";
const WITHOUT = "orders_8_without_outbox";

/**
 * The write scenario's figures with and without the outbox; null when the
 * file is missing, unreadable, or has no such figures.
 *
 * @example
 * ```ts
 * const bench = await benchmarkComparison(); // null: never run here
 * ```
 */
export async function benchmarkComparison(
  path = RESULTS,
): Promise<BenchmarkComparison | null> {
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch {
    return null;
  }
  const parsed = results.safeParse(raw);
  if (!parsed.success) return null;
  const { write } = parsed.data.scenarios;
  const side = (name: string): WriteFigures => {
    const f = write.figures.find((x) => x.name === name);
    const cpu = write.params?.cpuUsPerOp?.[name];
    return {
      ordersPerSecond: f?.value ?? null,
      cpuUsPerOrder: cpu ? cpu.bench + cpu.postgres : null,
    };
  };
  const without = side(WITHOUT);
  if (without.ordersPerSecond === null) return null;
  return {
    commit: parsed.data.code?.commit ?? null,
    finishedAt: parsed.data.finishedAt ?? null,
    withOutbox: side(WITH),
    withoutOutbox: without,
  };
}
