/**
 * The scorecard: a table for the terminal, and `drill.json` with the run's
 * options, its schedule as it happened, the per-second timeline and the
 * checker's verdict. The HTML report (report_html.tsx) is drawn from the
 * same object.
 */
import type { Verdict } from "./checker.ts";
import type { FaultEvent } from "./faults.ts";
import type { DrillOptions } from "./options.ts";
import type { Backlog } from "./stores.ts";

/** One second of the run, from the load's start. */
export interface Second {
  s: number;
  /** Pay requests accepted in this second. */
  accepted: number;
  /** Orders that reached their sixth receiver in this second. */
  completed: number;
  /** p50 latency (ms) of the orders accepted in this second. */
  p50Ms: number | null;
  /** Outbox rows plus open deliveries, when the databases answered. */
  backlog: number | null;
}

export interface DrillResult {
  version: 1;
  passed: boolean;
  options: Omit<DrillOptions, "out">;
  startedAt: string;
  seconds: { load: number; settle: number; total: number };
  load: {
    placed: number;
    accepted: number;
    unanswered: number;
    failures: Record<string, number>;
  };
  faults: FaultEvent[];
  faultsByKind: Record<string, number>;
  /** Dead letters the operator's sweep redrove while settling. */
  sweptDeadLetters: number;
  settled: boolean;
  verdict: Omit<Verdict, "orders">;
  timeline: Second[];
}

/** The per-second timeline from the orders and the backlog samples. */
export function timeline(
  startMs: number,
  loadSeconds: number,
  orders: Verdict["orders"],
  samples: { atMs: number; backlog: Backlog | null }[],
): Second[] {
  const span = Math.ceil(
    Math.max(
      loadSeconds,
      ...orders.map((o) => ((o.doneAt ?? o.at) - startMs) / 1000),
    ),
  );
  const out: Second[] = Array.from({ length: span + 1 }, (_, s) => ({
    s,
    accepted: 0,
    completed: 0,
    p50Ms: null,
    backlog: null,
  }));
  const latencies: number[][] = out.map(() => []);
  const slot = (ms: number) =>
    Math.min(span, Math.max(0, Math.floor((ms - startMs) / 1000)));
  for (const o of orders) {
    out[slot(o.at)].accepted++;
    if (o.doneAt !== null) {
      out[slot(o.doneAt)].completed++;
      latencies[slot(o.at)].push(o.doneAt - o.at);
    }
  }
  latencies.forEach((list, s) => {
    list.sort((a, b) => a - b);
    if (list.length) {
      out[s].p50Ms = Math.round(list[Math.floor(list.length / 2)]);
    }
  });
  for (const { atMs, backlog } of samples) {
    if (backlog) {
      out[slot(atMs)].backlog = backlog.outbox + backlog.pending +
        backlog.inFlight;
    }
  }
  return out;
}

const pad = (s: string, n: number) => s.padEnd(n);

/** The terminal's scorecard. */
export function table(result: DrillResult): string {
  const v = result.verdict;
  const o = result.options;
  const lines = [
    `drill: ${o.transport}${o.cluster ? " cluster x3" : ""}${
      o.split ? ", split databases" : ""
    }, ${o.workers} worker(s), seed ${o.seed}, ${o.durationS} s`,
    "",
    `${pad("orders placed", 28)}${result.load.placed}`,
    `${pad("pay requests accepted", 28)}${result.load.accepted}`,
    `${pad("pay requests unanswered", 28)}${result.load.unanswered}`,
    `${pad("faults", 28)}${result.faults.length} (${
      Object.keys(result.faultsByKind).length
    } kinds): ${
      Object.entries(result.faultsByKind).map(([k, n]) => `${k} ${n}`)
        .join(", ")
    }`,
    `${pad("dead letters swept", 28)}${result.sweptDeadLetters}`,
    `${pad("settled", 28)}${
      result.settled ? "yes" : "no"
    } (${result.seconds.settle} s)`,
    "",
    `${pad("check", 16)}${pad("count", 8)}detail`,
    `${pad("lost", 16)}${pad(String(v.lost), 8)}not paid ${v.detail.notPaid}; ${
      nonZero(v.detail.vanished, "never applied")
    }`,
    `${pad("doubled", 16)}${pad(String(v.doubled), 8)}${
      nonZero(v.detail.doubledBy, "none")
    }`,
    `${pad("out of order", 16)}${pad(String(v.outOfOrder), 8)}${
      nonZero(v.detail.outOfOrderBy, "none")
    }`,
    `${pad("stuck", 16)}${pad(String(v.stuck), 8)}${
      nonZero(v.detail.stuckBy, "none")
    }`,
    "",
    `${pad("latency, payment to sixth receiver", 36)}p50 ${
      v.latencyMs.p50 ?? "-"
    } ms, p99 ${v.latencyMs.p99 ?? "-"} ms, max ${v.latencyMs.max ?? "-"} ms`,
    `${pad("longest stall", 36)}${
      v.longestStall ? `${v.longestStall.ms} ms` : "-"
    }`,
    `${pad("runtime", 36)}${result.seconds.total} s`,
    "",
    result.passed
      ? "PASSED: nothing lost, doubled, out of order or stuck"
      : "FAILED: see the counts above",
  ];
  return lines.join("\n");
}

function nonZero(counts: Record<string, number>, none: string): string {
  const parts = Object.entries(counts).filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length ? parts.join(", ") : none;
}

export async function writeJson(path: string, result: DrillResult) {
  await Deno.writeTextFile(path, JSON.stringify(result, null, 2) + "\n");
}
