/**
 * What it costs, live: the table of islands/_costs_table.tsx, fetched again
 * from `GET /api/how-it-works/costs` whenever the sandbox changes, so a new
 * paid order shows up in the figures without a reload.
 */
import { CostsTable } from "./_costs_table.tsx";
import type { Costs } from "../services/how/costs.ts";
import type { BenchmarkComparison } from "../services/how/benchmark.ts";
import { useLive } from "./_live.ts";

/** Props: the server's render of the twin, the benchmark's, the transport. */
export interface HowCostsProps {
  initial: Costs;
  benchmark: BenchmarkComparison | null;
  queue: "postgres" | "jetstream";
}

/** The costs table, kept current. */
export default function HowCosts(props: HowCostsProps) {
  const live = useLive("/api/how-it-works/costs", props.initial);
  return (
    <>
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <CostsTable
        costs={live.data.value}
        benchmark={props.benchmark}
        queue={props.queue}
      />
    </>
  );
}
