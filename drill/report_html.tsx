/**
 * The HTML report: the faults on a timeline over orders per second,
 * latency and backlog, and the checker's counts. Drawn as the console
 * draws its server-side charts (components/queue_timeline.tsx): Preact
 * rendered to a string, one SVG bar per second, sizes as SVG attributes, a
 * title on each bar. One file with its own style sheet, readable with no
 * server and no script.
 */
import { renderToString } from "preact-render-to-string";
import type { DrillResult, Second } from "./report.ts";

const BAR = 6;
const HEIGHT = 90;

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; } td, th { padding: .2rem .8rem; text-align: left; border-bottom: 1px solid #ddd; }
.bad { color: #a40000; font-weight: bold; } .good { color: #1a6b1a; font-weight: bold; }
svg { display: block; background: #fafafa; border: 1px solid #ddd; }
.bar { fill: #4a6fa5; } .fault { fill: #e8a33d; opacity: .28; } .base { fill: #999; }
.label { font-size: 10px; fill: #555; }
`;

type Metric = "accepted" | "p50Ms" | "backlog";
const TITLES: Record<Metric, string> = {
  accepted: "pay requests accepted per second",
  p50Ms: "latency to the sixth receiver, p50 of each second's orders (ms)",
  backlog: "backlog: outbox rows and open deliveries",
};

function Chart({ result, metric }: { result: DrillResult; metric: Metric }) {
  const seconds: Second[] = result.timeline;
  const values = seconds.map((s) => s[metric] ?? 0);
  const peak = Math.max(1, ...values);
  const width = Math.max(1, seconds.length) * BAR;
  return (
    <figure>
      <figcaption>{TITLES[metric]} (peak {peak})</figcaption>
      <svg
        viewBox={`0 0 ${width} ${HEIGHT}`}
        width={width}
        height={HEIGHT}
        role="img"
        aria-label={`${TITLES[metric]}, peak ${peak}`}
      >
        {result.faults.map((f) => (
          <rect
            class="fault"
            x={(f.startMs / 1000) * BAR}
            y={0}
            width={Math.max(BAR, ((f.endMs - f.startMs) / 1000) * BAR)}
            height={HEIGHT}
          >
            <title>{`${f.kind}: ${f.detail || f.error}`}</title>
          </rect>
        ))}
        <rect class="base" y={HEIGHT - 1} width={width} height={1} />
        {values.map((v, i) => {
          if (v <= 0) return null;
          const h = Math.max(1, Math.round((v / peak) * (HEIGHT - 14)));
          return (
            <rect
              class="bar"
              x={i * BAR}
              y={HEIGHT - 1 - h}
              width={BAR - 1}
              height={h}
            >
              <title>{`${i} s: ${v}`}</title>
            </rect>
          );
        })}
        {result.faults.map((f, i) => (
          // Three rows of labels, so that faults close together stay legible.
          <text
            class="label"
            x={(f.startMs / 1000) * BAR + 2}
            y={10 + 11 * (i % 3)}
          >
            {f.kind}
          </text>
        ))}
      </svg>
    </figure>
  );
}

function Counts({ result }: { result: DrillResult }) {
  const v = result.verdict;
  const rows: [string, number, Record<string, number> | string][] = [
    ["lost", v.lost, { notPaid: v.detail.notPaid, ...v.detail.vanished }],
    ["doubled", v.doubled, v.detail.doubledBy],
    ["out of order", v.outOfOrder, v.detail.outOfOrderBy],
    ["stuck", v.stuck, v.detail.stuckBy],
  ];
  return (
    <table>
      <tr>
        <th>check</th>
        <th>count</th>
        <th>what the checker read</th>
      </tr>
      {rows.map(([name, n, detail]) => (
        <tr>
          <td>{name}</td>
          <td class={n === 0 ? "good" : "bad"}>{n}</td>
          <td>
            {typeof detail === "string" ? detail : Object.entries(detail)
              .map(([k, x]) => `${k} ${x}`).join(", ")}
          </td>
        </tr>
      ))}
    </table>
  );
}

function Report({ result }: { result: DrillResult }) {
  const o = result.options;
  const v = result.verdict;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Outbox Bakery drill, seed {o.seed}</title>
        <style>{STYLE}</style>
      </head>
      <body>
        <h1>
          Drill:{" "}
          <span class={result.passed ? "good" : "bad"}>
            {result.passed ? "passed" : "failed"}
          </span>
        </h1>
        <p>
          {o.transport}
          {o.cluster ? ", a cluster of three" : ""}
          {o.split ? ", a database per service" : ""}, {o.workers}{" "}
          worker process(es), seed {o.seed}, {o.durationS} s of load at {o.rate}
          {" "}
          orders/s, started {result.startedAt}. {result.load.placed}{" "}
          orders placed, {result.load.accepted} pay requests accepted,{" "}
          {result.faults.length} faults, {result.sweptDeadLetters}{" "}
          dead letters swept; settled: {result.settled ? "yes" : "no"}{" "}
          ({result.seconds.settle} s).
        </p>
        <h2>The checker's counts</h2>
        <Counts result={result} />
        <p>
          Latency from payment to the sixth receiver: p50{" "}
          {v.latencyMs.p50 ?? "-"} ms, p99 {v.latencyMs.p99 ?? "-"} ms, max{" "}
          {v.latencyMs.max ?? "-"} ms. Longest stall:{" "}
          {v.longestStall ? `${v.longestStall.ms} ms` : "-"}.
        </p>
        <h2>Timeline</h2>
        <Chart result={result} metric="accepted" />
        <Chart result={result} metric="p50Ms" />
        <Chart result={result} metric="backlog" />
        <h2>Faults</h2>
        <table>
          <tr>
            <th>at</th>
            <th>kind</th>
            <th>took</th>
            <th>what happened</th>
          </tr>
          {result.faults.map((f) => (
            <tr>
              <td>{(f.startMs / 1000).toFixed(1)} s</td>
              <td>{f.kind}</td>
              <td>{((f.endMs - f.startMs) / 1000).toFixed(1)} s</td>
              <td class={f.error ? "bad" : ""}>{f.error ?? f.detail}</td>
            </tr>
          ))}
        </table>
      </body>
    </html>
  );
}

export async function writeHtml(path: string, result: DrillResult) {
  await Deno.writeTextFile(
    path,
    `<!doctype html>\n${renderToString(<Report result={result} />)}\n`,
  );
}
