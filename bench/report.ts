/**
 * What the benchmark reports: figures with their unit, the baseline of the
 * same run they are compared to, the ratio, the target and whether it is
 * met; a table for people and `bench/results.json` for programs.
 */
import { round } from "./stats.ts";

/** A target: `value op bound`, where value is the ratio or the figure itself. */
export interface Target {
  /** What is compared: the ratio to the baseline, or the figure's value. */
  of: "ratio" | "value";
  op: "<=" | ">=" | "<";
  bound: number;
  /** The target in words, as the issue says it. */
  text: string;
}

export interface Figure {
  name: string;
  value: number | null;
  unit: string;
  /** The baseline figure of the same run (scenario/name) and its value. */
  baseline: { name: string; value: number | null; unit: string } | null;
  /** value / baseline value. */
  ratio: number | null;
  target: Target | null;
  /** null when there is no target, or no value to judge. */
  met: boolean | null;
  note?: string;
}

/** The CPU seconds spent while a scenario ran, by process family. */
export interface CpuUse {
  wallSeconds: number;
  benchSeconds: number;
  workerSeconds: number;
  postgresSeconds: number | null;
  /**
   * Busy seconds of every other process on the machine meanwhile: a machine
   * shared with other work shows here, and the figures are then noisier.
   */
  otherSeconds: number | null;
  /** The 1-minute load average when the scenario ended. */
  loadAverage: number;
}

export interface ScenarioResult {
  status: "ok" | "failed" | "skipped";
  seconds: number;
  /** The sizes and settings this run used. */
  params: Record<string, unknown>;
  figures: Figure[];
  cpu?: CpuUse;
  /** Top statements by total time (with --stats). */
  statements?: Record<string, unknown>[];
  error?: string;
  notes?: string[];
}

export interface Results {
  version: 1;
  mode: "full" | "quick";
  startedAt: string;
  finishedAt?: string;
  machine: Record<string, unknown>;
  /** The code measured: the commit, and files changed on top of it. */
  code: { commit: string | null; changed: string[] };
  method: string[];
  scenarios: Record<string, ScenarioResult>;
}

/** Builds a figure; with a baseline and a target, computes ratio and met. */
export function figure(
  name: string,
  value: number | null,
  unit: string,
  options: {
    baseline?: { name: string; value: number | null; unit: string };
    target?: Target;
    note?: string;
  } = {},
): Figure {
  const baseline = options.baseline ?? null;
  const ratio = value !== null && baseline?.value
    ? round(value / baseline.value, 3)
    : null;
  const target = options.target ?? null;
  let met: boolean | null = null;
  if (target) {
    const judged = target.of === "ratio" ? ratio : value;
    if (judged !== null && isFinite(judged)) {
      met = target.op === "<="
        ? judged <= target.bound
        : target.op === "<"
        ? judged < target.bound
        : judged >= target.bound;
    }
  }
  return {
    name,
    value: value === null ? null : round(value, 4),
    unit,
    baseline,
    ratio,
    target,
    met,
    ...(options.note ? { note: options.note } : {}),
  };
}

/** An absolute target on the figure's value. */
export function atMost(bound: number, text: string): Target {
  return { of: "value", op: "<=", bound, text };
}

export function atLeast(bound: number, text: string): Target {
  return { of: "value", op: ">=", bound, text };
}

/** A target on the ratio to the baseline. */
export function ratioAtLeast(bound: number, text: string): Target {
  return { of: "ratio", op: ">=", bound, text };
}

export function ratioAtMost(bound: number, text: string): Target {
  return { of: "ratio", op: "<=", bound, text };
}

function cell(v: number | null | undefined): string {
  if (v === null || v === undefined) return "-";
  return String(round(v, 4));
}

/** The table for people: one line per figure, grouped by scenario. */
export function table(results: Results): string {
  const rows: string[][] = [[
    "scenario",
    "figure",
    "value",
    "unit",
    "baseline",
    "ratio",
    "target",
    "met",
  ]];
  for (const [scenario, r] of Object.entries(results.scenarios)) {
    if (r.status !== "ok") {
      rows.push([
        scenario,
        r.status === "skipped"
          ? `(skipped${r.params.reason ? `: ${r.params.reason}` : ""})`
          : `(failed: ${r.error ?? "?"})`,
        "",
        "",
        "",
        "",
        "",
        "",
      ]);
      if (r.figures.length === 0) continue;
    }
    for (const f of r.figures) {
      rows.push([
        scenario,
        f.name,
        cell(f.value),
        f.unit,
        f.baseline ? `${f.baseline.name} ${cell(f.baseline.value)}` : "",
        f.ratio === null ? "" : cell(f.ratio),
        f.target?.text ?? "",
        f.met === null ? "" : f.met ? "yes" : "NO",
      ]);
    }
  }
  const widths = rows[0].map((_, i) =>
    Math.min(60, Math.max(...rows.map((r) => r[i].length)))
  );
  const line = (r: string[]) =>
    r.map((c, i) => c.slice(0, 60).padEnd(widths[i])).join("  ").trimEnd();
  return [
    line(rows[0]),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...rows.slice(1).map(line),
  ].join("\n");
}

/**
 * Every target of the run, one line each: the figure, what it is held to,
 * what was measured (the ratio for a target on the ratio, else the value)
 * and met or MISSED; skipped scenarios with their reason.
 */
export function targetsTable(results: Results): string {
  const rows: string[][] = [["target", "figure", "measured", "met"]];
  for (const [scenario, r] of Object.entries(results.scenarios)) {
    if (r.status === "skipped" && r.params.reason) {
      rows.push(["(skipped)", scenario, String(r.params.reason), ""]);
    }
    for (const f of r.figures) {
      if (!f.target) continue;
      const measured = f.target.of === "ratio"
        ? f.ratio === null
          ? "-"
          : `${cell(f.ratio)} (${cell(f.value)} ${f.unit} / ${
            cell(f.baseline?.value)
          })`
        : `${cell(f.value)} ${f.unit}`;
      rows.push([
        f.target.text,
        `${scenario}.${f.name}`,
        measured,
        f.met === null ? "-" : f.met ? "met" : "MISSED",
      ]);
    }
  }
  const widths = rows[0].map((_, i) =>
    Math.max(...rows.map((r) => r[i].length))
  );
  return rows.map((r) =>
    r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()
  )
    .join("\n");
}

/** CPU per scenario: where the time went, bench/workers/postgres. */
export function cpuTable(results: Results): string {
  const lines = [
    "scenario        wall s   bench cpu s  workers cpu s  postgres cpu s  other cpu s  load",
  ];
  for (const [scenario, r] of Object.entries(results.scenarios)) {
    if (!r.cpu) continue;
    lines.push(
      `${scenario.padEnd(14)}  ${cell(r.cpu.wallSeconds).padStart(6)}  ${
        cell(r.cpu.benchSeconds).padStart(11)
      }  ${cell(r.cpu.workerSeconds).padStart(13)}  ${
        cell(r.cpu.postgresSeconds).padStart(14)
      }  ${cell(r.cpu.otherSeconds).padStart(11)}  ${cell(r.cpu.loadAverage)}`,
    );
  }
  return lines.join("\n");
}

/** Writes the results as JSON (two-space indented, newline at the end). */
export async function writeResults(path: string, results: Results) {
  await Deno.writeTextFile(path, JSON.stringify(results, null, 2) + "\n");
}
